/* fixtures.h — hand-built graphs and chains shared by the graph tests. */
#ifndef RK_TEST_FIXTURES_H
#define RK_TEST_FIXTURES_H
#include "rk_graph.h"

/* x(4 B, grad) -> a(10) -> b(20, phantom 5, fwd overhead 7) -> c(30);
 * times fwd 1,3,5 and bwd 2,4,6 us; bwd_a needs x, bwd_c needs c. */
rk_status fx_three_ops(rk_graph *g);
/* One-block chain of fx_three_ops. */
rk_status fx_three_ops_chain(rk_chain *ch);
/* Write text to a fresh temporary file; returns its path (static buffer
 * per call slot 0..7). */
const char *fx_write_temp(int slot, const char *text);
/* Read a whole file (malloc'd), NULL on error. */
char *fx_read_file(const char *path);
#endif
