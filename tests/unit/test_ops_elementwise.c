/*
 * The elementwise operators (src/ops/elementwise.c): binary operators with
 * numpy broadcasting (size-1 dims, different ranks, symbolic sizes), the
 * activations, cast and bias_add, each checked against a hand-written C loop
 * and the oracle (tests/support/opcheck.h), compiled for "cpu" with the
 * default schedule and, for one case, a split/vectorize/parallel schedule;
 * then the error paths and their messages.
 */
#include "tt.h"
#include "support/opcheck.h"

static char cache_dir[] = "/tmp/tex-test-ops-elementwise-XXXXXX";

/* A hand-written loop over the output for the binary op EXPR(a, b) of
 * inputs IA and IB, broadcast. */
#define BIN_HAND(NAME, IA, IB, EXPR)                                                               \
    static void hand_##NAME(const oc *c, const void *u, const DLTensor *o, double *w)              \
    {                                                                                              \
        int64_t idx[8];                                                                            \
        (void)u;                                                                                   \
        for (int64_t k = 0; k < ops_numel(o); k++) {                                               \
            oc_unravel(o, k, idx);                                                                 \
            double a = oc_get(oc_in(c, IA), o->ndim, idx), b = oc_get(oc_in(c, IB), o->ndim, idx); \
            w[k] = (EXPR);                                                                         \
        }                                                                                          \
    }

/* The same for a unary EXPR(x) of input IX. */
#define UN_HAND(NAME, IX, EXPR)                                                                    \
    static void hand_##NAME(const oc *c, const void *u, const DLTensor *o, double *w)              \
    {                                                                                              \
        int64_t idx[8];                                                                            \
        (void)u;                                                                                   \
        for (int64_t k = 0; k < ops_numel(o); k++) {                                               \
            oc_unravel(o, k, idx);                                                                 \
            double x = oc_get(oc_in(c, IX), o->ndim, idx);                                         \
            w[k] = (EXPR);                                                                         \
        }                                                                                          \
    }

BIN_HAND(add, 0, 1, a + b)
BIN_HAND(sub, 0, 1, a - b)
BIN_HAND(mul, 0, 1, a *b)
BIN_HAND(div, 0, 1, a / b)
BIN_HAND(maximum, 0, 1, fmax(a, b))
BIN_HAND(minimum, 0, 1, fmin(a, b))
BIN_HAND(pow, 2, 3, pow(a, b))

/* add, sub, mul, div, maximum, minimum over [3, 1, 5] and [4, 5] (a size-1
 * dim and a missing one), pow over [7] and [1]: one kernel. */
static void test_binary_broadcast(void)
{
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "binary", 1);
    tex_tensor *A = oc_input_c(&c, "A", TEX_F32, 3, (int64_t[]){3, 1, 5});
    tex_tensor *B = oc_input_c(&c, "B", TEX_F32, 2, (int64_t[]){4, 5});
    tex_tensor *P = oc_input_c(&c, "P", TEX_F32, 1, (int64_t[]){7});
    tex_tensor *E = oc_input_c(&c, "E", TEX_F32, 1, (int64_t[]){1});
    c.adjust[2] = oc_positive;
    oc_output(&c, tex_op_add(ctx, "Add", A, B), hand_add);
    oc_output(&c, tex_op_sub(ctx, "Sub", A, B), hand_sub);
    oc_output(&c, tex_op_mul(ctx, NULL, A, B), hand_mul);
    oc_output(&c, tex_op_div(ctx, "Div", A, B), hand_div);
    oc_output(&c, tex_op_maximum(ctx, "Max", A, B), hand_maximum);
    oc_output(&c, tex_op_minimum(ctx, "Min", A, B), hand_minimum);
    oc_output(&c, tex_op_pow(ctx, "Pow", P, E), hand_pow);
    TT_EQ_STR(tex_tensor_name(c.out[2]), "mul");
    TT_EQ_INT(tex_tensor_ndim(c.out[0]), 3);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

BIN_HAND(floordiv, 0, 1, floor(a / b))

/* Symbolic sizes: X [N, M] + Y [M] and X * Y[N, 1] with N = 13, M = 1
 * bound at call time (a symbolic size equal to 1 at run time is not
 * broadcast: it is the same variable); integer add and floor division. */
static void test_binary_symbolic_and_int(void)
{
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "binary_sym", 2);
    tex_expr *N = oc_size(&c, "N", 13, true), *M = oc_size(&c, "M", 1, true);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 2, (tex_expr *[]){N, M});
    tex_tensor *Y = oc_input(&c, "Y", TEX_F32, 1, (tex_expr *[]){M});
    oc_output(&c, tex_op_add(ctx, "Add", X, Y), hand_add);
    tex_ctx *ctx2 = tex_ctx_new();
    oc c2;
    oc_init(&c2, ctx2, "binary_int", 3);
    tex_expr *L = oc_size(&c2, "L", 11, true);
    tex_tensor *I = oc_input(&c2, "I", TEX_I32, 2, (tex_expr *[]){L, tex_int(ctx2, 3)});
    tex_tensor *J = oc_input_c(&c2, "J", TEX_I32, 2, (int64_t[]){1, 3});
    oc_output(&c2, tex_op_add(ctx2, "IAdd", I, J), hand_add);
    oc_output(&c2, tex_op_div(ctx2, "IDiv", I, J), hand_floordiv);
    TT_EQ_INT(tex_tensor_dtype(c2.out[0]), TEX_I32);
    oc_run(&c, NULL);
    oc_run(&c2, NULL);
    tex_ctx_free(ctx);
    tex_ctx_free(ctx2);
}

UN_HAND(relu, 0, x > 0 ? x : 0)
UN_HAND(gelu, 0, 0.5 * x * (1 + erf(x / sqrt(2.0))))
UN_HAND(gelu_tanh, 0, 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))))
UN_HAND(silu, 0, x / (1 + exp(-x)))
UN_HAND(sigmoid, 0, 1 / (1 + exp(-x)))
UN_HAND(tanh, 0, tanh(x))
UN_HAND(cast_i32, 0, trunc(x * 1))
UN_HAND(copy, 0, x)
UN_HAND(relu_int, 1, x > 0 ? x : 0)
UN_HAND(gelu_int, 1, 0.5 * x * (1 + erf(x / sqrt(2.0))))
BIN_HAND(add_hf, 2, 3, a + b)

/* bias B [5] along axis 1 of X [2, 5, 3] */
static void hand_bias1(const oc *c, const void *u, const DLTensor *o, double *w)
{
    (void)u;
    int64_t idx[3];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        w[k] = oc_get(oc_in(c, 2), 3, idx) + oc_get(oc_in(c, 3), 1, (int64_t[]){idx[1]});
    }
}

/* bias C [3] along the last axis (-1) of X [2, 5, 3] */
static void hand_bias_last(const oc *c, const void *u, const DLTensor *o, double *w)
{
    (void)u;
    int64_t idx[3];
    for (int64_t k = 0; k < ops_numel(o); k++) {
        oc_unravel(o, k, idx);
        w[k] = oc_get(oc_in(c, 2), 3, idx) + oc_get(oc_in(c, 4), 1, (int64_t[]){idx[2]});
    }
}

/* The activations, cast and bias_add in one kernel: X [1, 7] f32 (a
 * 1-element and a prime dim), I [5] i32 (relu keeps i32, gelu gives f32). */
static void test_activations(void)
{
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "activations", 4);
    tex_tensor *X = oc_input_c(&c, "X", TEX_F32, 2, (int64_t[]){1, 7});
    tex_tensor *I = oc_input_c(&c, "I", TEX_I32, 1, (int64_t[]){5});
    tex_tensor *Z = oc_input_c(&c, "Z", TEX_F32, 3, (int64_t[]){2, 5, 3});
    tex_tensor *B = oc_input_c(&c, "B", TEX_F32, 1, (int64_t[]){5});
    tex_tensor *C = oc_input_c(&c, "C", TEX_F32, 1, (int64_t[]){3});
    oc_output(&c, tex_op_relu(ctx, "Relu", X), hand_relu);
    oc_output(&c, tex_op_gelu(ctx, "Gelu", X), hand_gelu);
    oc_output(&c, tex_op_gelu_tanh(ctx, "GeluT", X), hand_gelu_tanh);
    oc_output(&c, tex_op_silu(ctx, "Silu", X), hand_silu);
    oc_output(&c, tex_op_sigmoid(ctx, "Sig", X), hand_sigmoid);
    oc_output(&c, tex_op_tanh(ctx, "Tanh", X), hand_tanh);
    oc_output(&c, tex_op_cast(ctx, "ToI32", X, TEX_I32), hand_cast_i32);
    oc_output(&c, tex_op_cast(ctx, "ToF64", X, TEX_F64), hand_copy);
    oc_output(&c, tex_op_relu(ctx, "IRelu", I), hand_relu_int);
    oc_output(&c, tex_op_gelu(ctx, "IGelu", I), hand_gelu_int);
    oc_output(&c, tex_op_bias_add(ctx, "Bias1", Z, B, 1), hand_bias1);
    oc_output(&c, tex_op_bias_add(ctx, "BiasL", Z, C, -1), hand_bias_last);
    TT_EQ_INT(tex_tensor_dtype(c.out[8]), TEX_I32);
    TT_EQ_INT(tex_tensor_dtype(c.out[9]), TEX_F32);
    TT_EQ_INT(tex_tensor_dtype(c.out[6]), TEX_I32);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* f16 and bf16 operands (each operation rounds to the half type; the
 * tolerance is the halves'): broadcast add and mul, relu, gelu, a cast to
 * f32, bf16 plus f32 (promoted to f32). */
static void test_half_types(void)
{
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "halves", 6);
    tex_tensor *A = oc_input_c(&c, "A", TEX_F16, 2, (int64_t[]){3, 5});
    tex_tensor *B = oc_input_c(&c, "B", TEX_F16, 1, (int64_t[]){1});
    tex_tensor *H = oc_input_c(&c, "H", TEX_BF16, 1, (int64_t[]){5});
    tex_tensor *F = oc_input_c(&c, "F", TEX_F32, 2, (int64_t[]){3, 5});
    oc_output(&c, tex_op_add(ctx, "Add", A, B), hand_add);
    oc_output(&c, tex_op_mul(ctx, "Mul", A, B), hand_mul);
    oc_output(&c, tex_op_relu(ctx, "Relu", A), hand_relu);
    oc_output(&c, tex_op_gelu(ctx, "Gelu", A), hand_gelu);
    oc_output(&c, tex_op_cast(ctx, "ToF32", A, TEX_F32), hand_copy);
    oc_output_u(&c, tex_op_add(ctx, "Mixed", H, F), hand_add_hf, NULL, 1);
    TT_EQ_INT(tex_tensor_dtype(c.out[3]), TEX_F16);
    TT_EQ_INT(tex_tensor_dtype(c.out[5]), TEX_F32);
    oc_run(&c, NULL);
    tex_ctx_free(ctx);
}

/* A scheduled kernel: add with broadcasting and gelu over [37, 29] (the
 * split leaves a tail), symbolic rows. */
static void test_scheduled(void)
{
    tex_ctx *ctx = tex_ctx_new();
    oc c;
    oc_init(&c, ctx, "scheduled", 5);
    tex_expr *R = oc_size(&c, "R", 37, true);
    tex_tensor *X = oc_input(&c, "X", TEX_F32, 2, (tex_expr *[]){R, tex_int(ctx, 29)});
    tex_tensor *Y = oc_input_c(&c, "Y", TEX_F32, 1, (int64_t[]){29});
    oc_output(&c, tex_op_add(ctx, "Add", X, Y), hand_add);
    oc_output(&c, tex_op_gelu(ctx, "Gelu", X), hand_gelu);
    oc_run(&c, oc_sched_vector);
    tex_ctx_free(ctx);
}

/* Bad shapes, axes, dtypes and NULL operands: NULL, the code, and a message
 * naming the operator and the dims. */
static void test_errors(void)
{
    tex_ctx *ctx = tex_ctx_new();
    tex_tensor *A = tex_placeholder_c(ctx, "A", TEX_F32, 2, (int64_t[]){3, 4});
    tex_tensor *B = tex_placeholder_c(ctx, "B", TEX_F32, 1, (int64_t[]){5});
    tex_tensor *N1 =
        tex_placeholder(ctx, "N1", TEX_F32, 1, (tex_expr *[]){tex_var(ctx, "N", TEX_I32)});
    tex_tensor *M1 =
        tex_placeholder(ctx, "M1", TEX_F32, 1, (tex_expr *[]){tex_var(ctx, "M", TEX_I32)});
    oc_expect_error(ctx, tex_op_add(ctx, "C", A, B), TEX_EINVAL,
                    "tex_op_add: A's dim 1 (4) and B's dim 0 (5) do not broadcast", NULL);
    oc_expect_error(ctx, tex_op_mul(ctx, "C", N1, M1), TEX_EINVAL, "tex_op_mul: N1's dim 0 (N)",
                    "M1's dim 0 (M)", "not provably equal", NULL);
    oc_expect_error(ctx, tex_op_sub(ctx, "C", A, NULL), TEX_EMISUSE,
                    "tex_op_sub: operand b is NULL", NULL);
    oc_expect_error(ctx, tex_op_relu(ctx, "C", NULL), TEX_EMISUSE, "tex_op_relu: operand x is NULL",
                    NULL);
    TT_CHECK(tex_op_add(NULL, "C", A, B) == NULL);
    oc_expect_error(ctx, tex_op_bias_add(ctx, "C", A, B, 2), TEX_EINVAL,
                    "tex_op_bias_add: axis 2 is out of range for 'A' (2 dims)", NULL);
    oc_expect_error(ctx, tex_op_bias_add(ctx, "C", A, B, -1), TEX_EINVAL,
                    "tex_op_bias_add: B's dim 0 (5) != A's dim 1 (4)", NULL);
    oc_expect_error(ctx, tex_op_bias_add(ctx, "C", B, A, 0), TEX_EINVAL,
                    "tex_op_bias_add: bias 'A' has 2 dims, not 1", NULL);
    oc_expect_error(ctx, tex_op_cast(ctx, "C", A, (tex_dtype)99), TEX_EINVAL,
                    "tex_op_cast: unknown dtype 99", NULL);
    /* the first error is kept through a chain */
    tex_tensor *t = tex_op_relu(ctx, "R", tex_op_add(ctx, "S", A, B));
    oc_expect_error(ctx, t, TEX_EINVAL, "tex_op_add: A's dim 1 (4)", NULL);
    tex_ctx *other = tex_ctx_new();
    tex_tensor *O = tex_placeholder_c(other, "O", TEX_F32, 1, (int64_t[]){4});
    oc_expect_error(ctx, tex_op_add(ctx, "C", A, O), TEX_EMISUSE,
                    "tex_op_add: operand b ('O') comes from another context", NULL);
    tex_ctx_free(other);
    tex_ctx_free(ctx);
}

int main(void)
{
    if (oc_setup(cache_dir) != 0) {
        printf("test_ops_elementwise: cannot make a temporary cache directory\n");
        return 1;
    }
    TT_RUN(test_errors);
    if (!tex_target_available("cpu")) {
        printf("SKIP ops_elementwise (no working C compiler for target \"cpu\")\n");
        tt_remove_tree(cache_dir);
        return tt_finish();
    }
    TT_RUN(test_binary_broadcast);
    TT_RUN(test_binary_symbolic_and_int);
    TT_RUN(test_activations);
    TT_RUN(test_half_types);
    TT_RUN(test_scheduled);
    tt_remove_tree(cache_dir);
    return tt_finish();
}
