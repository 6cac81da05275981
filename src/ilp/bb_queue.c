/* bb_queue.c — owns the open nodes of branch-and-bound: a binary heap
 * ordered by lower bound, the bounds under a known bound counted as it (ties:
 * deeper node first, then older, so the order never depends on anything but
 * the search itself); a node can also be taken out by its id (the plunge's
 * backtracking). */
#include <math.h>
#include <stdlib.h>

#include "bb_internal.h"

void bb_node_free(bb_node *nd) {
    free(nd->chg);
    free(nd->basis);
    nd->chg = NULL;
    nd->basis = NULL;
}

/* Lower bound first, counting every bound under the known bound as the
 * known bound (those nodes can prove nothing better: among them only the
 * search for a solution matters); ties, deeper node first (it is nearer to a
 * solution), then older. */
static int bb_node_before(const bb_queue *q, const bb_node *a, const bb_node *b) {
    double ka = a->bound > q->floor ? a->bound : q->floor, kb = b->bound > q->floor ? b->bound : q->floor;
    if (ka != kb) return ka < kb;
    if (a->depth != b->depth) return a->depth > b->depth;
    return a->id < b->id;
}

static void bb_heap_up(bb_queue *q, int k) {
    bb_node t = q->heap[k];
    while (k > 0) {
        int p = (k - 1) / 2;
        if (!bb_node_before(q, &t, &q->heap[p])) break;
        q->heap[k] = q->heap[p];
        k = p;
    }
    q->heap[k] = t;
}

static void bb_heap_down(bb_queue *q, int k) {
    bb_node t = q->heap[k];
    for (;;) {
        int l = 2 * k + 1, r = l + 1, b = k;
        const bb_node *best = &t;
        if (l < q->size && bb_node_before(q, &q->heap[l], best)) { b = l; best = &q->heap[l]; }
        if (r < q->size && bb_node_before(q, &q->heap[r], best)) { b = r; }
        if (b == k) break;
        q->heap[k] = q->heap[b];
        k = b;
    }
    q->heap[k] = t;
}

int bb_queue_push(bb_queue *q, bb_node *nd) {
    if (q->size == q->cap) {
        int nc = q->cap ? 2 * q->cap : 256;
        bb_node *nh = realloc(q->heap, (size_t)nc * sizeof *nh);
        if (!nh) return -1;
        q->heap = nh;
        q->cap = nc;
    }
    q->heap[q->size++] = *nd;
    bb_heap_up(q, q->size - 1);
    return 0;
}

int bb_queue_pop(bb_queue *q, bb_node *out) {
    if (q->size == 0) return 0;
    q->popped++;
    *out = q->heap[0];
    q->size--;
    if (q->size > 0) {
        q->heap[0] = q->heap[q->size];
        bb_heap_down(q, 0);
    }
    return 1;
}

int bb_queue_take(bb_queue *q, long id, bb_node *out) {
    int k = 0;
    while (k < q->size && q->heap[k].id != id) k++;
    if (k == q->size) return 0;
    *out = q->heap[k];
    q->size--;
    if (k < q->size) {
        q->heap[k] = q->heap[q->size];
        bb_heap_up(q, k);
        bb_heap_down(q, k);
    }
    return 1;
}

double bb_queue_min_bound(const bb_queue *q) {
    if (!q->size) return INFINITY;
    return q->heap[0].bound > q->floor ? q->heap[0].bound : q->floor;
}

double bb_queue_prune(bb_queue *q, double cutoff) {
    int w = 0;
    double lo = INFINITY;
    for (int k = 0; k < q->size; k++) {
        if (q->heap[k].bound >= cutoff) {
            if (q->heap[k].bound < lo) lo = q->heap[k].bound;
            bb_node_free(&q->heap[k]);
            q->dropped++;
        }
        else q->heap[w++] = q->heap[k];
    }
    q->size = w;
    for (int k = q->size / 2 - 1; k >= 0; k--) bb_heap_down(q, k);
    return lo;
}

void bb_queue_free(bb_queue *q) {
    for (int k = 0; k < q->size; k++) bb_node_free(&q->heap[k]);
    free(q->heap);
    q->heap = NULL;
    q->size = q->cap = 0;
}
