/* json_io.c — typed JSON access with precise messages, JSON output helpers
 * and a small name table for the file readers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"

rk_status rkj_load(const char *path, json_t **out, rk_error *err) {
    json_error_t je;
    FILE *f = fopen(path, "rb");
    if (!f) return rk_fail(err, RK_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        if (je.line <= 0)
            return rk_fail(err, RK_EINPUT, "%s: not valid JSON: %s", path, je.text);
        return rk_fail(err, RK_EINPUT, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
    }
    *out = root;
    return RK_OK;
}

const char *rkj_type_name(const json_t *v) {
    if (!v) return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static rk_status missing(const char *file, const char *path, const char *key, const char *what, rk_error *err) {
    return rk_fail(err, RK_EINPUT, "%s: %s: missing field '%s' (expected %s)", file, path, key, what);
}
static rk_status wrong(const char *file, const char *path, const char *key, const char *what, json_t *v,
                       rk_error *err) {
    return rk_fail(err, RK_EINPUT, "%s: %s.%s: expected %s, got %s", file, path, key, what, rkj_type_name(v));
}

rk_status rkj_string(const char *file, const char *path, json_t *obj, const char *key, int required,
                     const char **out, rk_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v) return required ? missing(file, path, key, "a string", err) : RK_OK;
    if (!json_is_string(v)) return wrong(file, path, key, "a string", v, err);
    *out = json_string_value(v);
    return RK_OK;
}

rk_status rkj_int64(const char *file, const char *path, json_t *obj, const char *key, int required, int64_t *out,
                    rk_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v) return required ? missing(file, path, key, "an integer", err) : RK_OK;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return RK_OK;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 9e18) {
            *out = (int64_t)d;
            return RK_OK;
        }
    }
    return wrong(file, path, key, "an integer", v, err);
}

rk_status rkj_double(const char *file, const char *path, json_t *obj, const char *key, int required, double *out,
                     rk_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v) return required ? missing(file, path, key, "a number", err) : RK_OK;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return RK_OK;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "NaN") || !strcmp(s, "nan")) {
            *out = NAN;
            return RK_OK;
        }
        if (!strcmp(s, "Infinity") || !strcmp(s, "inf")) {
            *out = INFINITY;
            return RK_OK;
        }
    }
    return wrong(file, path, key, "a number", v, err);
}

rk_status rkj_array(const char *file, const char *path, json_t *obj, const char *key, int required, json_t **out,
                    rk_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v) return required ? missing(file, path, key, "an array", err) : RK_OK;
    if (!json_is_array(v)) return wrong(file, path, key, "an array", v, err);
    *out = v;
    return RK_OK;
}

rk_status rkj_object(const char *file, const char *path, json_t *obj, const char *key, int required, json_t **out,
                     rk_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v) return required ? missing(file, path, key, "an object", err) : RK_OK;
    if (!json_is_object(v)) return wrong(file, path, key, "an object", v, err);
    *out = v;
    return RK_OK;
}

void rkj_write_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

void rkj_write_double(FILE *f, double v) {
    if (!isfinite(v)) {
        fputs(v != v ? "\"NaN\"" : (v > 0 ? "\"Infinity\"" : "\"-Infinity\""), f);
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        fprintf(f, "%.1f", v);
        return;
    }
    fprintf(f, "%.17g", v);
}

static unsigned long hash_str(const char *s) {
    unsigned long h = 1469598103934665603UL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211UL;
    }
    return h;
}

rk_status rkj_names_init(rkj_names *t, int n) {
    int cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    t->cap = cap;
    t->keys = calloc((size_t)cap, sizeof(char *));
    t->vals = calloc((size_t)cap, sizeof(int));
    if (!t->keys || !t->vals) {
        rkj_names_free(t);
        return RK_ENOMEM;
    }
    return RK_OK;
}

void rkj_names_free(rkj_names *t) {
    free(t->keys);
    free(t->vals);
    t->keys = NULL;
    t->vals = NULL;
    t->cap = 0;
}

int rkj_names_put(rkj_names *t, const char *key, int val, int *prev) {
    unsigned long i = hash_str(key) & (unsigned long)(t->cap - 1);
    while (t->keys[i]) {
        if (!strcmp(t->keys[i], key)) {
            if (prev) *prev = t->vals[i];
            return 1;
        }
        i = (i + 1) & (unsigned long)(t->cap - 1);
    }
    t->keys[i] = key;
    t->vals[i] = val;
    return 0;
}

int rkj_names_get(const rkj_names *t, const char *key) {
    if (!t->cap) return -1;
    unsigned long i = hash_str(key) & (unsigned long)(t->cap - 1);
    while (t->keys[i]) {
        if (!strcmp(t->keys[i], key)) return t->vals[i];
        i = (i + 1) & (unsigned long)(t->cap - 1);
    }
    return -1;
}
