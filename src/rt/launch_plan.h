/*
 * The launch plan: a device module's host side (lower/device.h) compiled
 * into a form the runtime owns (malloc'ed, no arena pointers), so a kernel
 * can be launched after its context is freed: each extent, workspace size
 * and assert is a small stack program over the kernel's size table (the
 * values of the VAR parameters in order, then the size variables: exactly
 * the `sizes` array texi_backend.call receives). The same programs give the
 * derived dimensions (n + 1) of a kernel's signature (args.c), so sizes
 * have one evaluator.
 */
#ifndef TEX_RT_LAUNCH_PLAN_H
#define TEX_RT_LAUNCH_PLAN_H

#include "lower/device.h"

/* One instruction of a launch program (a postfix integer expression). */
typedef struct {
    int op;      /* launch_plan.c's opcodes: constant, size-table load, + - * floordiv
                    floormod min max, comparisons, && || ! select */
    int64_t imm; /* constant, or size-table index */
} texi_launch_insn;

typedef struct {
    int n;
    texi_launch_insn *code; /* n == 0: the constant 1 */
} texi_launch_prog;

typedef struct {
    char *name;                                  /* kernel symbol */
    texi_launch_prog extent[TEXI_N_LAUNCH_TAGS]; /* grid x/y/z, block x/y/z */
} texi_launch_kernel;

typedef struct {
    char *name;
    tex_dtype dtype;
    texi_launch_prog elems; /* element count */
} texi_launch_workspace;

typedef struct {
    int n_kernels;
    texi_launch_kernel *kernels;
    int n_workspace;
    texi_launch_workspace *workspace;
    int n_asserts;
    texi_launch_prog *asserts;
    char **assert_text; /* the printed condition, for the error message */
} texi_launch_plan;

/* Compiles m's host side against f's size table. 0, or an error in f->ctx
 * (TEX_EUNAVAILABLE naming the expression when it uses anything but
 * parameters and size variables; TEX_ENOMEM). */
int texi_launch_plan_build(const tex_func *f, const texi_device_module *m, texi_launch_plan *out);

/* Compiles e (NULL: the empty program, value 1) over f's size table into
 * *p without recording anything: 0, TEX_ENOMEM, or TEX_EUNAVAILABLE when e
 * uses anything but integer parameters and sizes (*bad: the first such
 * node, when bad is not NULL). */
int texi_size_prog_compile(const tex_func *f, const tex_expr *e, texi_launch_prog *p,
                           const tex_expr **bad);

/* Evaluates p; 0, or TEX_EINVAL (division by zero, stack misuse). */
int texi_launch_prog_eval(const texi_launch_prog *p, const int64_t *sizes, int64_t *value);

/* Frees what texi_launch_plan_build allocated; a zeroed plan is fine. */
void texi_launch_plan_free(texi_launch_plan *p);

#endif
