/*
 * The automatic scheduler (tex_auto_schedule, docs/auto_schedule.md), private
 * to src/autosched. It sits above src/lower: it reads compute bodies and
 * stages (ir, schedule internals) and edits a schedule only through the
 * public primitives, so its result is an ordinary schedule, which it lowers
 * to check it (auto_schedule.c).
 *
 * Two levels, one file per job:
 *   classify.c   what each stage is (injective, reduction, GEMM-like) and how
 *                its body reads the others (reuse, leading dims indexed by its
 *                own axes)
 *   partition.c  the graph level: which stages are inlined, which are computed
 *                inside another kernel's loops, which are kernels (roots)
 *   cpu.c        the kernel level on the CPU: tiling, parallel, vector, unroll
 *   cuda.c       the kernel level on CUDA: blocks, threads, cross-thread
 *                reductions, vectors
 *   cuda_gemm.c  CUDA GEMM-like kernels: block and register tiles, shared
 *                operand tiles, tensor cores
 *   tensorize.c  whether a GEMM-like stage's tiles fit a CPU GEMM built-in
 *   machine.c    the cache sizes, thread count and vector width of the host
 *   dump.c       TEX_DUMP=fusion
 */
#ifndef TEX_AUTOSCHED_AUTOSCHED_H
#define TEX_AUTOSCHED_AUTOSCHED_H

#include "schedule/primitive.h"
#include "schedule/schedule.h"

enum texi_as_kind {
    TEXI_AS_INPUT,     /* a placeholder */
    TEXI_AS_INJECTIVE, /* no reduce axis: elementwise, broadcast, data movement */
    TEXI_AS_REDUCE,    /* a reduction (sum, max, mean's sum, pooling) */
    TEXI_AS_GEMM       /* a sum of products of two tensors, each reused (matmul, conv) */
};

enum texi_as_fate {
    TEXI_AS_ROOT,     /* a kernel: its own loop nest */
    TEXI_AS_INLINED,  /* substituted into its consumers */
    TEXI_AS_ATTACHED, /* computed inside the loops of its kernel's root */
    TEXI_AS_NONE      /* an input */
};

/* How a kernel's root loops are laid out (cpu.c). */
enum texi_as_mode {
    TEXI_AS_MODE_ALONE, /* nothing attached */
    TEXI_AS_MODE_ROWS,  /* the members computed per row (or chunk) of the root */
    TEXI_AS_MODE_TILES  /* a GEMM-like member computed per register tile of the root */
};

typedef struct {
    tex_stage *st;
    enum texi_as_kind kind;
    bool expensive;         /* its body calls exp, log, erf, tanh, ... */
    bool movement;          /* its body only moves data: loads, selects, constants */
    bool recomputed;        /* inlined, an element would be evaluated more than once */
    int n_eff;              /* kernels-to-be reading it: consumers, through inlined ones */
    enum texi_as_fate fate; /* partition.c's decision */
    int root;               /* index of its kernel's root node (itself when ROOT), -1 inlined */
    const char *why;        /* the cost rule that decided the fate (dump.c) */
    /* For roots: the kernel's layout (partition.c) */
    enum texi_as_mode mode;
    int depth;  /* leading dims every member is indexed by the root's axes (ROWS, TILES) */
    int gemm;   /* node of the GEMM-like member (TILES), else -1 */
    int n_memb; /* attached members */
    /* For GEMM-like nodes (classify.c, tensorize.c) */
    const char *tz_why; /* why its tiles do not fit the CPU GEMM built-in; NULL: they do */
} texi_as_node;

/* Properties of the host (machine.c). */
typedef struct {
    long l1;     /* L1 data cache bytes */
    long l2;     /* L2 bytes per core */
    int threads; /* threads the kernels will run on */
    int vbytes;  /* widest vector register in bytes (16, 32, 64) */
} texi_as_machine;

typedef struct {
    tex_schedule *sch;
    tex_ctx *ctx;
    int n;               /* = sch->n_stages at the start (cache stages come later) */
    texi_as_node *nodes; /* parallel to sch->stages, producers first */
    texi_as_machine mach;
    bool strict_float;      /* "-strict-float": no reassociating reductions */
    bool cuda;              /* the target is "cuda" */
    bool no_tensorize;      /* "cpu -no-tensorize": the GEMM built-ins are not used */
    int sm;                 /* "cuda -arch=sm_NN": NN; 0 when not given (or "cpu") */
    const char *tz_builtin; /* the host's CPU GEMM built-in, or NULL (tensorize.c) */
    int64_t tz_nr;          /* its tile's column count */
    int n_merged;           /* stages merged into another of the same definition */
    const char **merged;    /* (merged, kept) tensor names, n_merged pairs */
} texi_as_graph;

/* Fills mach from the environment (TEX_NUM_THREADS), sysconf and /sys; every
 * value has a fallback. threads > 0 overrides the thread count. */
void texi_as_machine_probe(texi_as_machine *mach, int threads);

/* Kind, cost flags of every node, and why a GEMM node does not fit the CPU
 * built-ins (classify.c). 0, or bound inference's error. */
int texi_as_classify(texi_as_graph *g);

/* Whether stage c's body reads tensor t with a loop variable of c (an axis
 * or reduce axis of extent other than 1) missing from an index, so that an
 * element of t is read more than once (classify.c). */
bool texi_as_reads_with_reuse(const tex_stage *c, const tex_tensor *t);

/* How many leading dims of t every read of t in c's body indexes with c's
 * axes in the same positions (t[i0, i1, ...]); ndim of t when c does not read
 * t (classify.c). */
int texi_as_lead_match(const tex_stage *c, const tex_tensor *t);

/* The number of reads of t in c's body (each a copy of t's value when t is
 * inlined; classify.c). */
int texi_as_read_count(const tex_stage *c, const tex_tensor *t);

/* Whether iv appears in e (classify.c). */
bool texi_as_expr_uses(tex_expr *e, const tex_iter *iv);

/* Whether iv appears in one of the indices of access acc (classify.c). */
bool texi_as_access_uses(const tex_expr *acc, const tex_iter *iv);

/* Whether op's body is a reduction of a product of two reads: then *vec is
 * the one that reads along its columns (its last axis; the first read when
 * neither does) and *other the other one (classify.c). */
bool texi_as_product_reads(const texi_op *op, const tex_expr **vec, const tex_expr **other);

/* Whether GEMM-like stage gemm (a sum of a product of two reads) reads an
 * operand across its columns (its last axis) other than along that
 * operand's last index with stride 1: B stored [N, K], whose vectors along
 * the columns are gathers unless it is packed (classify.c). */
bool texi_as_columns_gathered(const tex_stage *gemm);

/* Whether GEMM-like stage st's register tiles fit the host's CPU GEMM
 * built-in (tensorize.c): NULL when they do, with its depth axis in *k,
 * else the reason. *builtin receives the built-in's name (NULL without
 * AVX2) and *nr its tile's column count either way. */
const char *texi_as_tensorize_fit(const texi_as_graph *g, const tex_stage *st, tex_iter **k,
                                  const char **builtin, int64_t *nr);

/* The iter of stage st (axis or reduce axis) that the last index of the
 * largest multi-dimensional read in its body is (the first of the largest;
 * a vector-matrix product's matrix, not its vector), or NULL (classify.c). */
tex_iter *texi_as_inner_iter(const tex_stage *st);

/* Whether the last index of the first multi-dimensional read in st's body
 * is not one variable but uses st's last axis: a pooling window's x *
 * stride + rx (with unit_stride, only x + rx) (classify.c). */
bool texi_as_window_along_last(const tex_stage *st, bool unit_stride);

/* The input of GEMM-like stage gemm that its reads index by the column
 * axis (its last) and not by the row axis (the one before): the right
 * operand, whose column panels a tile reuses; NULL if none (classify.c). */
tex_tensor *texi_as_panel_operand(const tex_stage *gemm);

/* The data-parallel axis a of st, not its last, along which some read of
 * st (looking through the producers sch inlines) runs its last
 * (contiguous) dim while another of its dims follows st's last axis: a
 * transpose's X[j, i] for Y[i, j] gives i; NULL when there is none
 * (X[i, j], a broadcast X[i]) (classify.c). */
tex_iter *texi_as_transposed_axis(const tex_schedule *sch, const tex_stage *st);

/* The dim of gemm's panel operand (texi_as_panel_operand) that its first
 * read indexes by the column axis: the last for B [K, N], the one before
 * for a transposed B [N, K] (tex_op_matmul's trans_b, tex_op_dense); -1
 * when there is no panel operand (classify.c). */
int texi_as_panel_dim(const tex_stage *gemm);

/* Whether gemm's reads of its panel operand (texi_as_panel_operand) use its
 * leading axis a (a < n_axes - 2): a blocked conv's filter block (NCHWc
 * weights [F / FB, C / CB, KH, KW, CB, FB]) picks the panel, where an
 * output row uses none and one panel serves every row (classify.c). */
bool texi_as_panel_axis(const tex_stage *gemm, int a);

/* The graph level: every node's fate, each root's mode and depth
 * (partition.c). Applies tex_compute_inline. 0 or the primitive's error. */
int texi_as_partition(texi_as_graph *g);

/* Whether every reader of node i, looking through inlined readers, is root
 * r or a member of r's kernel (partition.c): after a member of r became a
 * kernel of its own, a member it reads must too. */
bool texi_as_read_only_by(texi_as_graph *g, int i, int r);

/* The most places an inlined stage's value is copied into (its reads in
 * its consumers, through inlined consumers). A chain of stages that each
 * read their input k times inlines into k^depth copies of the first one:
 * seven chained gelus (5 reads each) took 13 s to schedule and lower and
 * printed 7 MB of loop AST; past the bound a stage is computed once. */
enum { TEXI_AS_MAX_COPIES = 16 };

/* Places one element of node i's value would be copied into if it were
 * inlined, with the graph's fates so far: each read in a consumer, times the
 * consumer's own copies where that is inlined (capped at
 * TEXI_AS_MAX_COPIES + 1; partition.c). */
int texi_as_inline_copies(texi_as_graph *g, int i);

/* The kernel level on the CPU: loops of every root and of its members
 * (cpu.c). 0 or the error of the primitive that failed. */
int texi_as_schedule_cpu(texi_as_graph *g);

/* The plain schedule ("-plain", and what tex_auto_schedule falls back to
 * when the schedule its rules made does not lower): every compute stage of
 * g->sch a kernel of its own (nothing inlined or attached), on the CPU its
 * data-parallel dims but the last fused into one parallel loop (cpu.c), on
 * CUDA its data-parallel dims fused, one thread per element, a 0-d
 * reduction reduced across one block's threads (cuda.c). Uses g's sch, ctx
 * and options only. 0 or the error of the primitive that failed. */
int texi_as_schedule_cpu_plain(texi_as_graph *g);
int texi_as_schedule_cuda_plain(texi_as_graph *g);

/* CUDA's changes to the partition, before the dump: elementwise members of
 * row kernels inlined, members of kernels without a row or tile loop to
 * compute them in made kernels of their own (cuda.c). 0 or the error of
 * tex_compute_inline. */
int texi_as_cuda_refine(texi_as_graph *g);

/* The kernel level on CUDA: block and thread mapping of every root and its
 * members (cuda.c). 0 or the error of the primitive that failed. */
int texi_as_schedule_cuda(texi_as_graph *g);

/* A "tiles" kernel of root node r on CUDA (cuda_gemm.c). */
int texi_as_cuda_gemm_tiles(texi_as_graph *g, int r);

/* A lone GEMM-like root stage st (>= 2 dims) on CUDA: a cache_write as its
 * epilogue, then as texi_as_cuda_gemm_tiles (cuda_gemm.c). */
int texi_as_cuda_gemm_alone(texi_as_graph *g, tex_stage *st);

/* The register-fragment tensor-core forms of the two above (cuda_mma.c),
 * for a GEMM stage whose f16 operands A and B are ab and that
 * texi_as_cuda_gemm_tiles found fit: st alone, or root node r's kernel
 * computing GEMM stage gs and its epilogue. */
int texi_as_cuda_mma_alone(texi_as_graph *g, tex_stage *st, tex_tensor *ab[2]);
int texi_as_cuda_mma_tiles(texi_as_graph *g, int r, tex_stage *gs, tex_tensor *ab[2]);

/* Prints the partition to stderr when TEX_DUMP lists "fusion" (dump.c). */
void texi_as_dump(const texi_as_graph *g, const char *target);

/* TEX_DUMP=fusion for the plain schedule of g->sch: its kernel count and
 * why it was chosen (dump.c). */
void texi_as_dump_plain(const texi_as_graph *g, const char *target, const char *why);

#endif
