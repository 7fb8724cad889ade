/*
 * ScheduleOps' shared state (src/lower/schedule_ops.c, which builds the loop
 * nests; src/lower/schedule_prefetch.c, which builds tex_prefetch's hints
 * inside them). Private to those two files.
 */
#ifndef TEX_LOWER_SCHEDULE_OPS_H
#define TEX_LOWER_SCHEDULE_OPS_H

#include "lower/lower.h"
#include "schedule/bound.h"

#define N_TAGS ((int)TEX_VTHREAD + 1)
#define ARITH(k, a, b) texi_bounds_arith(TEXI_EXPR_##k, (a), (b))

typedef struct {
    texi_lower *lw;
    tex_ctx *ctx;
    texi_bounds b;
    int n_params;
    tex_tensor **params; /* tensor parameters of the function */
    texi_range *env;     /* ranges of the enclosing loops' variables */
    int n_env, cap_env;
    tex_expr **sub_from; /* bound variables of leaves that run on another loop's variable */
    tex_expr **sub_to;
    int n_sub, cap_sub;
    tex_expr *tag_var[N_TAGS]; /* variable of the enclosing loop bound to each thread tag */
    tex_expr *tag_ext[N_TAGS];
    const tex_stage *fallback; /* stage whose ordinary nest is being built under tensorize */
} sops;

/* A last, partial tile of a CPU GEMM built-in that calls a smaller
 * instance of it (see "Tensorized stages" below). */
typedef struct {
    tex_intrin *intrin;   /* the instance it calls, or NULL: no such tile */
    const tex_iter *root; /* the root axis (a split's parent) it is the tail of */
    tex_expr *start;      /* where it starts on that axis */
    int leaf;             /* the split's inner leaf (whose extent the tile leaves unchecked),
                             or -1 for the reduction's tail (checked apart from the data) */
    int64_t cols;         /* an N tail's columns (its root NULL unless also an M tail), or 0 */
    int col_leaf;         /* the column leaf of an N tail */
} tz_tail;

typedef struct {
    int si;
    tex_stage *st;
    texi_stage_bounds *sb;
    tex_expr **off;       /* per leaf: the loop variable, or the enclosing thread variable */
    bool *no_loop;        /* per leaf: no loop of its own (extent 1, or an enclosing thread) */
    bool *red_leaf;       /* per leaf: derived from a reduce axis */
    tex_expr *leaf_guard; /* leaves on a larger enclosing thread loop, or NULL */
    int first_reduce;     /* first reduce leaf; n_leaf when none */
    bool is_reduce;
    int tz;                   /* tensorized leaf, or -1 */
    texi_intrin_arg *tz_args; /* its tiles (desc's inputs, then the output) */
    tex_expr **tz_last;       /* per leaf from tz on: extent - 1 */
    tex_intrin *tz_intrin;    /* what whole tiles call: the stage's intrinsic, or its
                                 instance of the nest's depth (a CPU GEMM built-in) */
    tz_tail tails[4];         /* the last tiles of the reduction (K), the rows (M), the columns (N),
                                 and of both rows and columns */
} stage_emit;

/* e with the bound variables of leaves without a loop replaced, simplified
 * over the enclosing loops. */
tex_expr *texi_so_env_expr(sops *o, tex_expr *e);
/* Whether t is a tensor parameter of the function. */
bool texi_so_is_param(const sops *o, const tex_tensor *t);
/* The index in st->all of leaf k. */
int texi_so_leaf_all(const tex_stage *st, int k);
/* Values of every iter of the stage from leaf offsets off[0..n_leaf). */
tex_expr **texi_so_values(sops *o, const stage_emit *se, tex_expr **off);
/* The indices of the stage's store from the values (a scatter part's row
 * through its rows array), and the tensor it stores to. */
tex_expr **texi_so_out_index(sops *o, const stage_emit *se, tex_expr **val);
tex_tensor *texi_so_out_tensor(const tex_stage *st);
/* e with the root variables replaced by their values. */
tex_expr *texi_so_bind_roots(sops *o, const stage_emit *se, tex_expr **val, tex_expr *e);
/* The extent of leaf m's loop given leaf offsets off. */
tex_expr *texi_so_leaf_extent(sops *o, const stage_emit *se, tex_expr **off, int m);

/* body preceded by the hints of the stage's tex_prefetch requests at leaf
 * m; and the requests' check (their leaf still a leaf, not vectorized).
 * (schedule_prefetch.c) */
int texi_so_with_prefetch(sops *o, const stage_emit *se, int m, tex_stmt **body);
int texi_so_check_prefetch(sops *o, const tex_stage *st);

#endif
