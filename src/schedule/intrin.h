/*
 * Tensor intrinsics (struct tex_intrin lives in ir/ir.h because INTRIN
 * statements point at it): construction shared by tex_intrin_extern and the
 * built-ins, and the built-in tables. Private to src/schedule and below.
 *
 * A built-in is an ordinary intrinsic whose desc compute and source tex
 * writes: the CPU ones (intrin_cpu.c) carry C source that picks AVX-512,
 * AVX2 or portable code with the preprocessor (generated code is compiled
 * with -march=native); the CUDA ones (intrin_cuda.c) carry CUDA C++ device
 * functions using nvcuda::wmma or mma.sync, called by every thread of a warp.
 */
#ifndef TEX_SCHEDULE_INTRIN_H
#define TEX_SCHEDULE_INTRIN_H

#include "schedule/schedule.h"

/* Validates and builds an intrinsic (tensorize.c): desc must be a compute
 * of ctx; its inputs are collected in order of first use; function names
 * must be C identifiers; body, or reset and update, are required
 * (docs/api.md, rule 10). `call` names the public function for messages. NULL with
 * TEX_EINVAL recorded on a bad argument. */
tex_intrin *texi_intrin_make(tex_ctx *ctx, const char *call, const char *name, tex_tensor *desc,
                             const char *source, const char *body_fn, const char *reset_fn,
                             const char *update_fn, const char *builtin);

/* The built-in named `name` ("cpu.*" in intrin_cpu.c, "cuda.*" in
 * intrin_cuda.c), built in ctx; NULL when the name is unknown (nothing
 * recorded: tex_intrin_builtin reports it) or with ENOMEM recorded. */
tex_intrin *texi_intrin_builtin_cpu(tex_ctx *ctx, const char *name);
/* The CPU transpose built-ins ("cpu.transpose_f32_*", intrin_cpu_transpose.c),
 * as texi_intrin_builtin_cpu. */
tex_intrin *texi_intrin_builtin_cpu_transpose(tex_ctx *ctx, const char *name);
tex_intrin *texi_intrin_builtin_cuda(tex_ctx *ctx, const char *name);

/* The register-resident CUDA built-ins ("cuda.mma_*", intrin_cuda_frag.c),
 * as texi_intrin_builtin_cuda. */
tex_intrin *texi_intrin_builtin_cuda_frag(tex_ctx *ctx, const char *name);

/* Which of in's tensors (bit i: desc tensor i, inputs in order then the
 * output) are fragment tiles, which must be TEX_SCOPE_LOCAL buffers
 * (intrin_cuda_frag.c); 0 for every other intrinsic. */
unsigned texi_intrin_frag_operands(const tex_intrin *in);

/* The tile side T of the CPU transpose built-in named `builtin` (B[T, T] =
 * A[T, T] transposed: 16 for "cpu.transpose_f32_avx512", 8 for
 * "cpu.transpose_f32_avx2"), or 0 when there is no such built-in. */
int texi_intrin_cpu_transpose_side(const char *builtin);

/* The reduction depth (KR) of a CPU GEMM built-in instance, or 0 when `in`
 * is not one (intrin_cpu.c, "Any K"). */
int64_t texi_intrin_cpu_depth(const tex_intrin *in);

/* The rows (MR) of a CPU GEMM built-in instance, or 0 when `in` is not one. */
int64_t texi_intrin_cpu_rows(const tex_intrin *in);

/* The most rows of an instance of the CPU GEMM built-in named `builtin`
 * ("cpu.gemm_f32_avx512": 7, one more than its MR; "cpu.gemm_f32_avx2": 6),
 * or 0 when there is no such built-in. */
int64_t texi_intrin_cpu_max_rows(const char *builtin);

/* The columns of a CPU GEMM built-in instance (NR, or fewer for an N
 * tail's), or 0 when `in` is not one. */
int64_t texi_intrin_cpu_cols(const tex_intrin *in);

/* The instance of in's CPU GEMM built-in with mr rows (1 <= mr <=
 * texi_intrin_cpu_max_rows), nc columns (1 <= nc <= NR) and depth kr (>=
 * 1): `in` itself when that is its shape, else a new intrinsic built in
 * ctx (C functions named for the shape).
 * NULL when `in` is not a CPU GEMM built-in or the shape is out of range
 * (nothing recorded), or with ENOMEM recorded. */
tex_intrin *texi_intrin_builtin_cpu_shape(tex_ctx *ctx, tex_intrin *in, int64_t mr, int64_t nc,
                                          int64_t kr);

/* texi_intrin_builtin_cpu_shape with in's rows and columns: the instance of
 * depth kr. */
tex_intrin *texi_intrin_builtin_cpu_depth(tex_ctx *ctx, tex_intrin *in, int64_t kr);

#endif
