/*
 * The C emitter's shared state, private to codegen_c.c (names, statements,
 * the entry point) and codegen_expr.c (expressions and the helpers they
 * need).
 */
#ifndef TEX_BACKEND_CPU_CODEGEN_C_H
#define TEX_BACKEND_CPU_CODEGEN_C_H

#include "backend_cpu/cpu.h"
#include "util/cnames.h"

/* Helpers of the prologue, emitted only when the body uses them. */
enum {
    TEXI_CG_H_F16 = 1 << 0,       /* tex_f16_from_f32 / tex_f16_to_f32 / tex_round_f16 */
    TEXI_CG_H_BF16 = 1 << 1,      /* the same for bf16 */
    TEXI_CG_H_FLOOR_I32 = 1 << 2, /* tex_floordiv_i32 / tex_floormod_i32 */
    TEXI_CG_H_FLOOR_I64 = 1 << 3,
    TEXI_CG_H_MINMAX_I32 = 1 << 4, /* tex_min_i32 / tex_max_i32 */
    TEXI_CG_H_MINMAX_I64 = 1 << 5,
    TEXI_CG_H_MINMAX_U32 = 1 << 6,
    TEXI_CG_H_MINMAX_U64 = 1 << 7,
    TEXI_CG_H_MINMAX_F32 = 1 << 8,
    TEXI_CG_H_MINMAX_F64 = 1 << 9,
    TEXI_CG_H_F2I = 1 << 10,  /* saturating float -> integer conversions */
    TEXI_CG_H_ABS = 1 << 11,  /* tex_abs_i32 / tex_abs_i64 */
    TEXI_CG_H_ALLOC = 1 << 12 /* tex_alloc: 64-byte aligned heap memory */
};

typedef struct {
    tex_ctx *ctx;
    const tex_func *f;
    int threads;
    unsigned helpers;   /* TEXI_CG_H_* used so far */
    texi_cnames names;  /* C identifiers of variables and buffers (key: VAR / buffer key) */
    texi_range *ranges; /* enclosing loops, LETs and size vars: for proofs */
    int n_ranges, cap_ranges;
    int indent;
    int par_depth;           /* > 0 inside an OpenMP parallel region */
    int heap_depth;          /* > 0 inside the scope of a heap temporary */
    int loop_depth;          /* enclosing loops */
    bool uses_rc;            /* the body sets tex_rc */
    size_t rc_check_at[2];   /* body text [from, to) of the last tex_rc check, see assemble */
    bool stack_arrays;       /* some temporary is a stack array */
    const char *thread_loop; /* innermost thread-bound loop's variable, or NULL */
    int rc;                  /* first error (recorded in ctx), 0 when none */
    bool oom;
} texi_cg;

/* The C name bound to key (a VAR node, or a buffer's data variable), marked
 * used; records TEX_EINTERNAL naming `name` and returns "?" when unbound. */
const char *texi_cg_lookup(texi_cg *g, const void *key, const char *name);

/* Records the error (the first one only) in g and its context. */
void texi_cg_fail(texi_cg *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The C element type of storage of dtype t (f16/bf16: uint16_t, bool: uint8_t). */
const char *texi_cg_storage_type(tex_dtype t);

/* The C type of a value of dtype t (f16/bf16 values are float, bool int). */
const char *texi_cg_value_type(tex_dtype t);

/* Appends e as a C expression whose precedence is at least prec (it is
 * parenthesized otherwise). index: e is index arithmetic (i32/i64 emitted
 * plainly, see codegen_expr.c). */
void texi_cg_expr(texi_cg *g, texi_sb *sb, const tex_expr *e, int prec, bool index);

/* Appends `buf[index]` reading storage of dtype st as a value of dtype t. */
void texi_cg_load(texi_cg *g, texi_sb *sb, const texi_buffer *buf, const tex_expr *index,
                  tex_dtype t, int prec);

/* Appends e converted to storage of dtype t (the right-hand side of a STORE). */
void texi_cg_store_value(texi_cg *g, texi_sb *sb, const tex_expr *e, tex_dtype t);

/* Appends the definitions of the helpers in mask. */
void texi_cg_helpers(texi_sb *sb, unsigned mask);

/* Precedence levels (C's, higher binds tighter). */
enum {
    TEXI_CG_P_TOP = 0,
    TEXI_CG_P_COND = 3,
    TEXI_CG_P_OR = 4,
    TEXI_CG_P_AND = 5,
    TEXI_CG_P_EQ = 9,
    TEXI_CG_P_REL = 10,
    TEXI_CG_P_ADD = 12,
    TEXI_CG_P_MUL = 13,
    TEXI_CG_P_UNARY = 14,
    TEXI_CG_P_POSTFIX = 15
};

#endif
