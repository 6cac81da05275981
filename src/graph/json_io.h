/* json_io.h — internal: typed access to jansson values with messages that
 * name the file, the JSON path and what was expected; JSON string output. */
#ifndef RK_JSON_IO_H
#define RK_JSON_IO_H

#include <jansson.h>
#include <stdio.h>

#include "rk_graph.h"

/* Load a JSON file; on a syntax error the message gives file:line:column. */
rk_status rkj_load(const char *path, json_t **out, rk_error *err);

/* Field getters: `path` is the JSON path of obj (e.g. "classes[2]"). When
 * `required` is 0 and the key is missing, *out keeps its value and RK_OK is
 * returned. */
rk_status rkj_string(const char *file, const char *path, json_t *obj, const char *key, int required,
                     const char **out, rk_error *err);
rk_status rkj_int64(const char *file, const char *path, json_t *obj, const char *key, int required, int64_t *out,
                    rk_error *err);
rk_status rkj_double(const char *file, const char *path, json_t *obj, const char *key, int required, double *out,
                     rk_error *err);
rk_status rkj_array(const char *file, const char *path, json_t *obj, const char *key, int required, json_t **out,
                    rk_error *err);
rk_status rkj_object(const char *file, const char *path, json_t *obj, const char *key, int required, json_t **out,
                     rk_error *err);
const char *rkj_type_name(const json_t *v);

/* Write s as a JSON string literal. */
void rkj_write_string(FILE *f, const char *s);
/* Write a double so that it reads back identically ("NaN" is never written). */
void rkj_write_double(FILE *f, double v);

/* Name -> index lookup table (open addressing) for readers. */
typedef struct {
    int cap;
    const char **keys;
    int *vals;
} rkj_names;
rk_status rkj_names_init(rkj_names *t, int n);
void rkj_names_free(rkj_names *t);
/* Returns 0 on insert, 1 if the key exists (its index in *prev). */
int rkj_names_put(rkj_names *t, const char *key, int val, int *prev);
int rkj_names_get(const rkj_names *t, const char *key); /* -1 if absent */

#endif
