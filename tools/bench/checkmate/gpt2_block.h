/* gpt2_block.h — a CD-graph of one GPT2 transformer block for the benchmark. */
#ifndef GPT2_BLOCK_H
#define GPT2_BLOCK_H
#include "rk_graph.h"
rk_status gpt2_block(rk_graph *g, int batch, int seq, int hidden, int heads, rk_error *err);
#endif
