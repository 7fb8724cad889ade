/*
 * The C-family printer: one printer of lowered functions as C-like source,
 * shared by the C + OpenMP backend (src/backend_cpu) and the CUDA C backend
 * (src/backend_cuda). It owns what the two languages share: identifiers,
 * indentation and error recording, expressions with C's precedence and the
 * reference evaluator's scalar semantics (cexpr.c), the plain statements
 * (LET, IF, STORE, SEQ, EVALUATE, serial loops, intrinsic calls), the
 * entry point's parameter list and the scalar arguments' locals
 * (cprint.c), the small helper functions the expressions call
 * (chelpers.c), and vectors (pass simd's, docs/passes.md): their
 * expressions and stores (cvector.c), types and helpers (cvtypes.c) and
 * vector math (cvmath.c).
 *
 * A target describes itself in a texi_cp_target: its types, the spellings
 * that differ (restrict, inline helpers, f16/bf16 conversions, a native
 * rsqrt), and two hooks through which it prints the statements and the
 * expressions that are its own (parallel loops and allocations on the CPU;
 * thread indices, barriers, vector accesses and allreduces in CUDA). A
 * backend's printer state embeds a texi_cp as its first member.
 *
 * Layer: above rt, below the backends (docs/architecture.md).
 */
#ifndef TEX_CODEGEN_C_CPRINT_H
#define TEX_CODEGEN_C_CPRINT_H

#include "lower/lower.h"
#include "util/cnames.h"
#include "util/strbuf.h"

typedef struct texi_cp texi_cp;

/* Helper functions of the prologue, emitted only when the body uses them. */
enum {
    TEXI_CP_H_F16 = 1 << 0,        /* tex_round_f16 and the target's f16 conversions */
    TEXI_CP_H_BF16 = 1 << 1,       /* the same for bf16 */
    TEXI_CP_H_FLOOR_I32 = 1 << 2,  /* tex_floordiv_i32 / tex_floormod_i32 */
    TEXI_CP_H_FLOOR_I64 = 1 << 3,  /* the same for int64_t */
    TEXI_CP_H_MINMAX_I32 = 1 << 4, /* tex_min_i32 / tex_max_i32 */
    TEXI_CP_H_MINMAX_I64 = 1 << 5,
    TEXI_CP_H_MINMAX_U32 = 1 << 6,
    TEXI_CP_H_MINMAX_U64 = 1 << 7,
    TEXI_CP_H_MINMAX_F32 = 1 << 8,
    TEXI_CP_H_MINMAX_F64 = 1 << 9,
    TEXI_CP_H_F2I = 1 << 10,        /* saturating float -> integer conversions */
    TEXI_CP_H_ABS = 1 << 11,        /* tex_abs_i32 / tex_abs_i64 */
    TEXI_CP_H_SEARCH_I32 = 1 << 12, /* tex_upper_bound_i32 / tex_find_i32 (SEARCH) */
    TEXI_CP_H_SEARCH_I64 = 1 << 13  /* the same over int64_t arrays */
};

/* Vector types: element dtypes (tex_dtype) and lanes up to 2^6. */
enum { TEXI_CP_N_DTYPES = TEX_F64 + 1, TEXI_CP_MAX_LANES_LOG2 = 6 };

/* What one C-family language changes in the shared printer. */
typedef struct {
    const char *label;           /* after the function's name in errors: "" or " (target cuda)" */
    const char *const *reserved; /* identifiers the generated code may not redefine */
    size_t n_reserved;
    const char *restrict_kw; /* "restrict" / "__restrict__" */
    const char *inline_kw;   /* qualifiers of a helper function: "static inline" ... */
    /* Element type of storage of dtype t; type of a value of dtype t
     * (f16/bf16 values are float holding a value of the narrow type). */
    const char *(*storage_type)(tex_dtype t);
    const char *(*value_type)(tex_dtype t);
    /* Opening text that decodes stored f16/bf16 into float and encodes a
     * float into storage ("tex_f16_to_f32(" / "__half2float(" ...). */
    const char *decode[2], *encode[2]; /* [0]: f16, [1]: bf16 */
    /* Definitions behind TEXI_CP_H_F16 / _BF16: tex_round_f16 (float ->
     * float rounded to f16) and whatever decode/encode call. */
    const char *half_helpers[2];
    bool native_rsqrt;  /* rsqrtf/rsqrt exist; otherwise 1 / sqrt */
    bool vectors;       /* GCC/Clang vector extensions: the CPU tail's vector nodes print */
    bool base_pointers; /* straight-line loop bodies get base pointers (cbases.c) */
    /* The tensor intrinsic's source for this target, or NULL when it has
     * none: then the call fails with "tensor intrinsic 'NAME' has no
     * <intrin_lang>source<missing_intrin>". */
    const char *(*intrin_source)(const tex_intrin *in);
    const char *intrin_lang, *missing_intrin;
    /* Prints statement s itself and returns true, or returns false to leave
     * it to the shared printer. Called for every statement. */
    bool (*stmt)(texi_cp *p, texi_sb *sb, const tex_stmt *s);
    /* The same for expressions; called for VAR and LOAD nodes only (NULL: none). */
    bool (*expr)(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec);
} texi_cp_target;

/* A base pointer of the loop body being printed (cbases.c): `name` points
 * at element base + first of the buffer with key `key`. */
typedef struct {
    const void *key;
    const texi_buffer *buf;
    const tex_expr *base;
    int64_t first;
    tex_expr *var; /* the pointer's binding key */
    const char *name;
    int count; /* accesses that chose it */
    bool stored;
} texi_cp_base;

enum { TEXI_CP_MAX_BASES = 32, TEXI_CP_MAX_PRIVATE = 32 };

/* Bytes of slack after a private buffer (cvmask.c): the widest vector. */
enum { TEXI_CP_PRIVATE_SLACK = 64 };

struct texi_cp {
    tex_ctx *ctx;
    const tex_func *f;
    const texi_cp_target *target;
    texi_cnames names;  /* identifiers of variables and buffers (key: VAR / buffer key) */
    texi_range *ranges; /* enclosing loops, LETs and size vars: for proofs */
    int n_ranges, cap_ranges;
    int indent;
    unsigned helpers; /* TEXI_CP_H_* used so far */
    /* Vectors: the lane being printed (-1: whole vectors, cvector.c), the
     * vector types used (bit k of [element dtype]: 2^k lanes), and the
     * last vector type name. */
    int lane;
    unsigned vector_types[TEXI_CP_N_DTYPES];
    unsigned vector_minmax[TEXI_CP_N_DTYPES]; /* bit k: min/max helpers of 2^k lanes */
    unsigned vector_select[TEXI_CP_N_DTYPES]; /* bit k: select helper of 2^k lanes */
    unsigned vector_masked[2]
                          [TEXI_CP_N_DTYPES]; /* [store]: bit k, tex_mload_/_mstore_ of 2^k lanes */
    unsigned vector_widened[2][TEXI_CP_N_DTYPES]; /* the same for tex_wload_ / tex_wstore_ */
    /* Keys of the buffers in scope that one thread alone uses and that have
     * a vector of slack after their end (cvmask.c, "Private buffers"). */
    const void *private_bufs[TEXI_CP_MAX_PRIVATE];
    int n_private;
    unsigned vector_math[TEXI_CP_MAX_LANES_LOG2 + 1]; /* [k]: TEXI_VM_* of 2^k lanes */
    /* [op][element dtype]: bit k, the tex_vreduce_ helper of 2^k lanes */
    unsigned vector_reduce[TEXI_REDUCE_COUNT][TEXI_CP_N_DTYPES];
    bool libm_math; /* vector math calls libm per lane (-strict-float) */
    char vector_name[32];
    int n_bases; /* base pointers in scope, cbases.c */
    texi_cp_base bases[TEXI_CP_MAX_BASES];
    int rc; /* first error (recorded in ctx), 0 when none */
};

/* Precedence levels (C's, higher binds tighter). */
enum {
    TEXI_CP_P_TOP = 0,
    TEXI_CP_P_COND = 3,
    TEXI_CP_P_OR = 4,
    TEXI_CP_P_AND = 5,
    TEXI_CP_P_EQ = 9,
    TEXI_CP_P_REL = 10,
    TEXI_CP_P_ADD = 12,
    TEXI_CP_P_MUL = 13,
    TEXI_CP_P_UNARY = 14,
    TEXI_CP_P_POSTFIX = 15
};

/* ------------------------------------------------------------ cprint.c */

void texi_cp_init(texi_cp *p, const tex_func *f, const texi_cp_target *target);
void texi_cp_fini(texi_cp *p);

/* Records the error (the first one only) in p and its context, prefixed
 * "tex_build: function 'NAME'<label>: ". */
void texi_cp_fail(texi_cp *p, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The identifier of key: its existing binding (a re-bound loop or LET
 * variable keeps it), else a new one derived from name; marked unused.
 * "?" on ENOMEM (recorded). */
const char *texi_cp_bind(texi_cp *p, const void *key, const char *name);

/* The identifier bound to key, marked used; records TEX_EINTERNAL naming
 * `name` and returns "?" when unbound. */
const char *texi_cp_lookup(texi_cp *p, const void *key, const char *name);

/* Whether key is bound and was looked up since it was bound. */
bool texi_cp_used(const texi_cp *p, const void *key);

/* Marks every identifier unused (before a kernel's body, see texi_cp_param_prologue). */
void texi_cp_mark_unused(texi_cp *p);

/* Adds var's range for the proofs; false on ENOMEM (recorded). */
bool texi_cp_push_range(texi_cp *p, tex_expr *var, tex_expr *min, tex_expr *extent);

/* Size variables are non-negative: [0, max of their type). */
void texi_cp_size_ranges(texi_cp *p);

/* Indentation, then one indented line (p->indent levels of four spaces). */
void texi_cp_indent(texi_cp *p, texi_sb *sb);
void texi_cp_line(texi_cp *p, texi_sb *sb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Comment text: no comment terminator, no newline. */
void texi_cp_comment_text(texi_sb *sb, const char *s);

/* An indented comment line "/ * what: <e as TEX_DUMP prints it> * /". */
void texi_cp_expr_comment(texi_cp *p, texi_sb *sb, const char *what, const tex_expr *e);

/* Statement s (the target's hook first, then the shared forms). */
void texi_cp_stmt(texi_cp *p, texi_sb *sb, const tex_stmt *s);

/* Statement s one indentation level deeper. */
void texi_cp_block(texi_cp *p, texi_sb *sb, const tex_stmt *s);

/* "for (T v = min; v < min + extent; ++v) {", the body with v's range, "}". */
void texi_cp_loop(texi_cp *p, texi_sb *sb, const tex_stmt *s);

/* The constant element count of b, or -1. */
int64_t texi_cp_const_elems(const texi_buffer *b);

/* The entry point's parameters, comma-separated, binding their names: one
 * pointer per tensor parameter (storage type; const when the body never
 * stores to it; restrict on all), int64_t per size VAR parameter, the
 * storage type of its dtype per other VAR parameter, then int64_t per size
 * variable that is not a parameter. A scalar whose argument type is not its
 * value type arrives as NAME_arg (texi_cp_param_prologue converts it).
 * Returns the number of parameters. */
int texi_cp_params(texi_cp *p, texi_sb *sb);

/* The locals of converted scalars the body used (halves decoded, bool
 * tested, sizes cast from int64_t) and `(void)x;` for unused parameters;
 * goes before the body, after it was printed. */
void texi_cp_param_prologue(texi_cp *p, texi_sb *sb);

/* The source of every distinct intrinsic the body calls, once each, in
 * order of first call, each after a comment naming it; a source equal to
 * an earlier one's is not repeated. */
void texi_cp_intrin_sources(texi_cp *p, texi_sb *sb);

/* ------------------------------------------------------------- cexpr.c */

/* Appends e as an expression whose precedence is at least prec (it is
 * parenthesized otherwise). index: e is index arithmetic (i32/i64 emitted
 * plainly, see cexpr.c). */
void texi_cp_expr(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec, bool index);

/* Appends e converted to storage of dtype t (the right-hand side of a STORE). */
void texi_cp_store_value(texi_cp *p, texi_sb *sb, const tex_expr *e, tex_dtype t);

/* Appends `buf[index]` decoded from storage as a value of dtype t. */
void texi_cp_load(texi_cp *p, texi_sb *sb, const texi_buffer *buf, tex_expr *index, tex_dtype t,
                  int prec);

/* ------------------------------------------------------------ cbases.c */

/* Declares the base pointers of loop body `body` (cbases.c's top comment)
 * at the current indentation and puts them in scope; returns how many,
 * for texi_cp_bases_end, which ends their scope (after the body) with
 * `(void)name;` for any the body did not print. */
int texi_cp_bases_begin(texi_cp *p, texi_sb *sb, const tex_stmt *body);
void texi_cp_bases_end(texi_cp *p, texi_sb *sb, int n);

/* Appends `buf[index]`, through a base pointer in scope when one covers
 * the element (index scalar, or lane p->lane of a RAMP). */
void texi_cp_element(texi_cp *p, texi_sb *sb, const texi_buffer *buf, tex_expr *index);

/* ------------------------------------------------------------ cvector.c */

/* Appends the vector e (lanes > 1) at p->lane -1: a vector value. */
void texi_cp_vector(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec);
/* In lane mode (p->lane >= 0): prints lane p->lane of a RAMP, BROADCAST or
 * vector VAR and returns true; false for the nodes whose scalar form
 * (over their operands' lanes) is their lane. */
bool texi_cp_lane_expr(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec);
/* Whether a load or store of buffer storage dtype st at index is one
 * vector access: a RAMP of stride 1 over storage that holds the values. */
bool texi_cp_dense_access(tex_dtype st, const tex_expr *index);
/* A STORE whose index is a vector. */
void texi_cp_vector_store(texi_cp *p, texi_sb *sb, const tex_stmt *s);
/* The horizontal reduction e (scalar VREDUCE of a vector): a call of its
 * tex_vreduce_ helper; TEX_EUNAVAILABLE recorded for a target without
 * vector extensions (CUDA). */
void texi_cp_vreduce(texi_cp *p, texi_sb *sb, const tex_expr *e);

/* ------------------------------------------------------------- cvmask.c */
/* A predicated vector LOAD (p->lane -1) as a call of its masked-move
 * helper; false when it has none (then it is a composite of its lanes). */
bool texi_cp_masked_load(texi_cp *p, texi_sb *sb, const tex_expr *e);
/* Lane p->lane of a predicated LOAD: `(mask ? load : 0)`. */
void texi_cp_masked_load_lane(texi_cp *p, texi_sb *sb, const tex_expr *e, int prec);
/* A predicated vector STORE: one masked-move helper call, or lane by lane. */
void texi_cp_masked_store(texi_cp *p, texi_sb *sb, const tex_stmt *s);
/* The masked-move helpers used (with <immintrin.h>), after the typedefs. */
void texi_cp_mask_helpers(const texi_cp *p, texi_sb *sb);

/* ------------------------------------------------------------ cvtypes.c */

/* The name of the vector type of `lanes` values of dtype t (the _u form:
 * aligned to the element), recorded as used; valid until the next call. */
const char *texi_cp_vector_type(texi_cp *p, tex_dtype t, int lanes, bool unaligned);
/* log2 of lanes, or -1 when lanes is not a power of two in [2, 64]. */
int texi_cp_lanes_log2(int lanes);
/* The typedefs of the vector types used, then the vector helpers used. */
void texi_cp_vector_typedefs(const texi_cp *p, texi_sb *sb);

/* ---------------------------------------------------------- chelpers.c */

/* Appends the definitions of the helpers in mask, qualified by the target's inline_kw. */
void texi_cp_helpers(const texi_cp_target *target, texi_sb *sb, unsigned mask);

#endif
