/* fixtures.c — hand-built graphs and temp files for the graph tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

rk_status fx_three_ops(rk_graph *g) {
    rk_op_spec ops[] = {
        {"a", 1, {-1}, 10, 0, 1, 2, 0, 0, 1, 0},
        {"b", 1, {0}, 20, 5, 3, 4, 7, 0, 0, 0},
        {"c", 1, {1}, 30, 0, 5, 6, 0, 0, 0, 1},
    };
    rk_error err;
    return rk_graph_from_specs(g, 4, 1, ops, 3, &err);
}

rk_status fx_three_ops_chain(rk_chain *ch) {
    rk_chain_init(ch);
    rk_graph g;
    rk_status r = fx_three_ops(&g);
    if (r) return r;
    rk_chain_add_class(ch, &g);
    rk_chain_add_block(ch, "only", 0);
    rk_error err;
    return rk_chain_validate(ch, "test", &err);
}

static char paths[8][64];
const char *fx_write_temp(int slot, const char *text) {
    snprintf(paths[slot], sizeof paths[slot], "/tmp/rkmate_test_%d_%d_XXXXXX", (int)getpid(), slot);
    int fd = mkstemp(paths[slot]);
    if (fd < 0) return NULL;
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n) {
        close(fd);
        return NULL;
    }
    close(fd);
    return paths[slot];
}

char *fx_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}
