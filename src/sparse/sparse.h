/*
 * Sparse axes, buffers and iterations (tex.h, "sparse"; docs/sparse.md):
 * the private records behind tex_sp_axis and tex_sp_buffer, shared by the
 * files of this module. Everything lives in its context's arena.
 */
#ifndef TEX_SPARSE_SPARSE_H
#define TEX_SPARSE_SPARSE_H

#include "ir/ir.h"

enum texi_sp_kind {
    TEXI_SP_DENSE_FIXED,
    TEXI_SP_DENSE_VARIABLE,
    TEXI_SP_SPARSE_FIXED,
    TEXI_SP_SPARSE_VARIABLE,
};

struct tex_sp_axis {
    tex_ctx *ctx;
    const char *name;
    enum texi_sp_kind kind;
    tex_sp_axis *parent; /* NULL for a root */
    tex_expr *length;    /* coordinates lie in [0, length) */
    tex_expr *nnz;       /* variable: positions in all; sparse-fixed: per parent position */
    tex_expr *n_pos;     /* positions in all (the values' length of a buffer ending here) */
    tex_tensor *indptr;  /* variable kinds: [parent's n_pos + 1], else NULL */
    tex_tensor *indices; /* sparse kinds: [n_pos], else NULL */
    tex_tensor *rows;    /* tex_sp_rows, made on first use */
    tex_expr *coord;     /* VAR standing for the coordinate in iteration bodies */
    tex_expr *pos;       /* VAR standing for the position (buffer reads) */
};

struct tex_sp_buffer {
    tex_ctx *ctx;
    const char *name;
    tex_dtype dtype;
    int n_axes;
    tex_sp_axis **axes; /* root first, each the parent of the next */
    tex_tensor *values; /* tex_sp_values, made on first use */
};

/* A sparse iteration before lowering (stage I, tex_sp_iter_new). */
struct tex_sp_iter {
    tex_ctx *ctx;
    const char *name;
    int n;
    tex_sp_axis **axes; /* as given: a dense output's dimensions are its 'S' axes in this order */
    const char *kinds;  /* 'S' or 'R' per axis */
    tex_sp_buffer *out; /* the sparse output, or NULL */
    tex_expr *body;
    int *order;            /* the loop order: indices into axes (tex_sp_reorder), first identity */
    bool reordered;        /* tex_sp_reorder was called: the stage starts in that order */
    tex_sp_rows_mode rows; /* how a fused loop finds its rows (tex_sp_iter_rows) */
};

/* The widest ELL bucket of the hyb format (tex_sp_hyb_*) is 2^10. */
#define TEXI_SP_HYB_MAX_LOG2 10

/* The position-space form of one iteration axis (iteration.c -> position.c). */
typedef struct {
    tex_expr *pos;   /* the axis's position over the compute's axes */
    tex_expr *coord; /* its coordinate */
} texi_sp_point;

/* The extent of axis a's positions under its parent's position q and the
 * first of them (lowering 1, position.c); q is NULL for a root. */
tex_expr *texi_sp_extent(const tex_sp_axis *a, tex_expr *q);
tex_expr *texi_sp_base(const tex_sp_axis *a, tex_expr *q);
/* The coordinate at position pos whose first position under the parent is base. */
tex_expr *texi_sp_coord_at(const tex_sp_axis *a, tex_expr *pos, tex_expr *base);

/* The parent coordinate of position pos of variable axis J under a root
 * (the row of a CSR non-zero), found by binary search of J's indptr. */
tex_expr *texi_sp_row_of(const tex_sp_axis *J, tex_expr *pos);

/* b read at the coordinates of axes[0..b->n_axes) (coordinate space): the
 * levels where axes[d] is b's own axis (a prefix) read positions, the others
 * search b's indices for the coordinate; 0 where one is absent (search.c). */
tex_expr *texi_sp_read_at(tex_sp_buffer *b, tex_sp_axis *const axes[]);

/* body with every coordinate and position variable of axes[0..n) replaced by
 * pt[i] (lowering 1 and 2 at once: a buffer read tex_sp_at is a load of its
 * values at the last axis's position); TEX_EINVAL naming `call` when the body
 * still uses an axis outside the iteration. */
tex_expr *texi_sp_bind(tex_ctx *ctx, const char *call, int n, tex_sp_axis *const axes[],
                       const texi_sp_point pt[], tex_expr *body);

#endif
