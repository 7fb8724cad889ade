/*
 * ops.h: the standard workloads of the differential tests, and the harness
 * that runs a schedule of one against the oracle. Header-only (static
 * functions); include it after tt.h.
 *
 * A workload (ops_wl) is built in a context: its placeholders (inputs), its
 * intermediates (mid, producers first) and its output, plus the symbolic
 * sizes it uses with the values they get at call time. Builders:
 *   matmul, batch matmul, conv2d NCHW (stride, zero padding through a padded
 *   intermediate that reads a clamped index), softmax (row max, sum of
 *   exp(x - max), normalize), layernorm (mean, variance, normalize with eps,
 *   gamma/beta), transpose, 2-D max/avg pooling, an elementwise chain
 *   (exp/tanh/sigmoid/add/mul over three inputs, two intermediates), and
 *   each reduction kind (sum/prod/max/min, optionally with a where-condition,
 *   over one or two axes).
 *
 * ops_check(w, s, ...) lowers s with the workload's inputs and output as
 * parameters (tex_lower_tensors, or tex_lower with the sizes as VAR
 * parameters), fills the inputs with seeded random non-zero values of
 * moderate magnitude (|x| in [0.5, 1.5], so products stay finite), poisons
 * the outputs (NaN / 0xA5 bytes), runs the interpreter and the reference
 * evaluator and compares with a tolerance fitting the dtype. A failure
 * prints the seed, the log of schedule steps, the reason and the lowered
 * AST (tex_func_str).
 */
#ifndef TEX_TESTS_SUPPORT_OPS_H
#define TEX_TESTS_SUPPORT_OPS_H

#include "lower/device.h"
#include "lower/lower.h"
#include "interp/interp.h"
#include "util/half.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS_MAX 8

typedef struct {
    const char *name;
    tex_ctx *ctx;
    int n_in;
    tex_tensor *in[OPS_MAX]; /* placeholders, in parameter order */
    int n_mid;
    tex_tensor *mid[OPS_MAX]; /* intermediates, producers first */
    tex_tensor *out;
    tex_tensor *out2; /* a second output (an intermediate kept), or NULL */
    int n_vars;
    tex_expr *vars[OPS_MAX]; /* symbolic sizes */
    int64_t vals[OPS_MAX];   /* their values at call time */
    bool var_params;         /* lower with the sizes as TEX_ARG_VAR parameters */
    int n_scal;
    tex_expr *scal[OPS_MAX];   /* scalar parameters (alpha, beta ...), after the sizes */
    double scal_vals[OPS_MAX]; /* their values at call time (TEX_VAL_F64) */
    bool exact;                /* run on arrays of exactly their size (ops_exact) */
    bool scaled_atol;          /* the absolute tolerance times the output's largest magnitude
                                  (chains of contractions, whose small results are
                                  differences of large sums) */
} ops_wl;

/* A text log of the schedule steps applied (printed on failure). */
typedef struct {
    char text[8192];
    size_t len;
} ops_log;

__attribute__((format(printf, 2, 3))) static inline void ops_logf(ops_log *l, const char *fmt, ...)
{
    if (l->len + 1 >= sizeof l->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->text + l->len, sizeof l->text - l->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->len = l->len + (size_t)k < sizeof l->text ? l->len + (size_t)k : sizeof l->text - 1;
}

/* ------------------------------------------------------------- random */

static inline uint64_t ops_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (inclusive). */
static inline int64_t ops_rand_range(uint64_t *state, int64_t lo, int64_t hi)
{
    return hi <= lo ? lo : lo + (int64_t)(ops_rand(state) % (uint64_t)(hi - lo + 1));
}

/* ------------------------------------------------------------ builders */

static inline void ops_init(ops_wl *w, tex_ctx *ctx, const char *name)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->name = name;
}

/* A size: the constant v, or (symbolic) a new variable bound to v at call time. */
static inline tex_expr *ops_size(ops_wl *w, const char *name, int64_t v, bool symbolic)
{
    if (!symbolic || w->n_vars == OPS_MAX)
        return tex_int(w->ctx, v);
    tex_expr *e = tex_var(w->ctx, name, TEX_I32);
    w->vars[w->n_vars] = e;
    w->vals[w->n_vars++] = v;
    return e;
}

/* An input of dtype t (filled with random non-zero values of t). */
static inline tex_tensor *ops_input_typed(ops_wl *w, const char *name, tex_dtype t, int ndim,
                                          tex_expr *const shape[])
{
    tex_tensor *x = tex_placeholder(w->ctx, name, t, ndim, shape);
    w->in[w->n_in++] = x;
    return x;
}

static inline tex_tensor *ops_input(ops_wl *w, const char *name, int ndim, tex_expr *const shape[])
{
    return ops_input_typed(w, name, TEX_F32, ndim, shape);
}

static inline tex_tensor *ops_mid(ops_wl *w, tex_tensor *t)
{
    w->mid[w->n_mid++] = t;
    return t;
}

static inline tex_expr *ops_f(ops_wl *w, double v)
{
    return tex_const(w->ctx, TEX_F32, v);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] */
static inline tex_tensor *ops_matmul(ops_wl *w, int64_t m, int64_t n, int64_t k, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_expr *K = ops_size(w, "K", k, sym);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, K});
    tex_tensor *B = ops_input(w, "B", 2, (tex_expr *[]){K, N});
    tex_iter *i = tex_axis(c, "i", M), *j = tex_axis(c, "j", N), *r = tex_reduce_axis(c, "k", K);
    tex_expr *body = tex_mul(TEX_AT(A, tex_iv(i), tex_iv(r)), TEX_AT(B, tex_iv(r), tex_iv(j)));
    w->out = tex_compute(c, "C", 2, (tex_iter *[]){i, j}, tex_sum(body, 1, &r));
    return w->out;
}

/* C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] */
static inline tex_tensor *ops_batch_matmul(ops_wl *w, int64_t bt, int64_t m, int64_t n, int64_t k,
                                           bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *Bt = ops_size(w, "Bt", bt, sym), *M = ops_size(w, "M", m, sym);
    tex_expr *N = ops_size(w, "N", n, sym), *K = ops_size(w, "K", k, sym);
    tex_tensor *A = ops_input(w, "A", 3, (tex_expr *[]){Bt, M, K});
    tex_tensor *B = ops_input(w, "B", 3, (tex_expr *[]){Bt, K, N});
    tex_iter *b = tex_axis(c, "b", Bt), *i = tex_axis(c, "i", M), *j = tex_axis(c, "j", N);
    tex_iter *r = tex_reduce_axis(c, "k", K);
    tex_expr *body = tex_mul(TEX_AT(A, tex_iv(b), tex_iv(i), tex_iv(r)),
                             TEX_AT(B, tex_iv(b), tex_iv(r), tex_iv(j)));
    w->out = tex_compute(c, "C", 3, (tex_iter *[]){b, i, j}, tex_sum(body, 1, &r));
    return w->out;
}

static inline tex_expr *ops_clamp(tex_expr *x, tex_expr *lo, tex_expr *hi)
{
    return tex_min(tex_max(x, lo), hi);
}

/* Conv2d NCHW: Pad[n, c, h, w] = in bounds ? D[n, c, clamp(h - p), clamp(w - p)] : 0;
 * Out[n, f, y, x] = sum_{c, ry, rx} Pad[n, c, y*s + ry, x*s + rx] * Wt[f, c, ry, rx]. */
static inline tex_tensor *ops_conv2d(ops_wl *w, int64_t n, int64_t ch, int64_t h, int64_t wd,
                                     int64_t f, int64_t kh, int64_t kw, int64_t stride, int64_t pad,
                                     bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *N = ops_size(w, "N", n, sym), *C = tex_int(c, ch), *H = ops_size(w, "H", h, sym);
    tex_expr *W = ops_size(w, "W", wd, sym), *F = tex_int(c, f), *P = tex_int(c, pad);
    tex_expr *KH = tex_int(c, kh), *KW = tex_int(c, kw), *S = tex_int(c, stride);
    tex_tensor *D = ops_input(w, "D", 4, (tex_expr *[]){N, C, H, W});
    tex_tensor *Wt = ops_input(w, "Wt", 4, (tex_expr *[]){F, C, KH, KW});
    tex_expr *PH = tex_add(H, tex_int(c, 2 * pad)), *PW = tex_add(W, tex_int(c, 2 * pad));
    tex_iter *pn = tex_axis(c, "n", N), *pc = tex_axis(c, "c", C), *ph = tex_axis(c, "h", PH);
    tex_iter *pw = tex_axis(c, "w", PW);
    tex_expr *hy = tex_sub(tex_iv(ph), P), *wx = tex_sub(tex_iv(pw), P);
    tex_expr *zero = tex_int(c, 0);
    tex_expr *inb =
        tex_and(tex_and(tex_ge(hy, zero), tex_lt(hy, H)), tex_and(tex_ge(wx, zero), tex_lt(wx, W)));
    tex_expr *val =
        TEX_AT(D, tex_iv(pn), tex_iv(pc), ops_clamp(hy, zero, tex_sub(H, tex_int(c, 1))),
               ops_clamp(wx, zero, tex_sub(W, tex_int(c, 1))));
    tex_tensor *Pad = ops_mid(w, tex_compute(c, "Pad", 4, (tex_iter *[]){pn, pc, ph, pw},
                                             tex_select(inb, val, ops_f(w, 0))));
    tex_expr *OH = tex_add(tex_floordiv(tex_sub(PH, KH), S), tex_int(c, 1));
    tex_expr *OW = tex_add(tex_floordiv(tex_sub(PW, KW), S), tex_int(c, 1));
    tex_iter *on = tex_axis(c, "n", N), *of = tex_axis(c, "f", F), *oy = tex_axis(c, "y", OH);
    tex_iter *ox = tex_axis(c, "x", OW);
    tex_iter *rc = tex_reduce_axis(c, "rc", C), *ry = tex_reduce_axis(c, "ry", KH);
    tex_iter *rx = tex_reduce_axis(c, "rx", KW);
    tex_expr *body =
        tex_mul(TEX_AT(Pad, tex_iv(on), tex_iv(rc), tex_add(tex_mul(tex_iv(oy), S), tex_iv(ry)),
                       tex_add(tex_mul(tex_iv(ox), S), tex_iv(rx))),
                TEX_AT(Wt, tex_iv(of), tex_iv(rc), tex_iv(ry), tex_iv(rx)));
    w->out = tex_compute(c, "Out", 4, (tex_iter *[]){on, of, oy, ox},
                         tex_sum(body, 3, (tex_iter *[]){rc, ry, rx}));
    return w->out;
}

/* Mx[i] = max_j X[i, j]; Se[i] = sum_j exp(X[i, j] - Mx[i]); Y = exp(X - Mx) / Se. */
static inline tex_tensor *ops_softmax(ops_wl *w, int64_t m, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_tensor *X = ops_input(w, "X", 2, (tex_expr *[]){M, N});
    tex_iter *i1 = tex_axis(c, "i", M), *k1 = tex_reduce_axis(c, "k", N);
    tex_tensor *Mx = ops_mid(
        w, tex_compute(c, "Mx", 1, &i1, tex_reduce_max(TEX_AT(X, tex_iv(i1), tex_iv(k1)), 1, &k1)));
    tex_iter *i2 = tex_axis(c, "i", M), *k2 = tex_reduce_axis(c, "k", N);
    tex_expr *e2 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(k2)), TEX_AT(Mx, tex_iv(i2))));
    tex_tensor *Se = ops_mid(w, tex_compute(c, "Se", 1, &i2, tex_sum(e2, 1, &k2)));
    tex_iter *i3 = tex_axis(c, "i", M), *j3 = tex_axis(c, "j", N);
    tex_expr *e3 = tex_exp(tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(j3)), TEX_AT(Mx, tex_iv(i3))));
    w->out = tex_compute(c, "Y", 2, (tex_iter *[]){i3, j3}, tex_div(e3, TEX_AT(Se, tex_iv(i3))));
    return w->out;
}

/* Mean[i] = sum_j X[i, j] / N; Var[i] = sum_j (X[i, j] - Mean[i])^2 / N;
 * Y[i, j] = (X[i, j] - Mean[i]) * rsqrt(Var[i] + eps) * G[j] + Bt[j]. */
static inline tex_tensor *ops_layernorm(ops_wl *w, int64_t m, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_tensor *X = ops_input(w, "X", 2, (tex_expr *[]){M, N});
    tex_tensor *G = ops_input(w, "G", 1, &N), *Bt = ops_input(w, "Bt", 1, &N);
    tex_expr *invn = tex_div(ops_f(w, 1.0), tex_cast(TEX_F32, N));
    tex_iter *i1 = tex_axis(c, "i", M), *k1 = tex_reduce_axis(c, "k", N);
    tex_tensor *Mean =
        ops_mid(w, tex_compute(c, "Mean", 1, &i1,
                               tex_sum(tex_mul(TEX_AT(X, tex_iv(i1), tex_iv(k1)), invn), 1, &k1)));
    tex_iter *i2 = tex_axis(c, "i", M), *k2 = tex_reduce_axis(c, "k", N);
    tex_expr *d2 = tex_sub(TEX_AT(X, tex_iv(i2), tex_iv(k2)), TEX_AT(Mean, tex_iv(i2)));
    tex_tensor *Var =
        ops_mid(w, tex_compute(c, "Var", 1, &i2, tex_sum(tex_mul(tex_mul(d2, d2), invn), 1, &k2)));
    tex_iter *i3 = tex_axis(c, "i", M), *j3 = tex_axis(c, "j", N);
    tex_expr *d3 = tex_sub(TEX_AT(X, tex_iv(i3), tex_iv(j3)), TEX_AT(Mean, tex_iv(i3)));
    tex_expr *norm = tex_mul(d3, tex_rsqrt(tex_add(TEX_AT(Var, tex_iv(i3)), ops_f(w, 1e-5))));
    w->out = tex_compute(c, "Y", 2, (tex_iter *[]){i3, j3},
                         tex_add(tex_mul(norm, TEX_AT(G, tex_iv(j3))), TEX_AT(Bt, tex_iv(j3))));
    return w->out;
}

/* B[j, i] = A[i, j] */
static inline tex_tensor *ops_transpose(ops_wl *w, int64_t m, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_tensor *A = ops_input(w, "A", 2, (tex_expr *[]){M, N});
    tex_iter *j = tex_axis(c, "j", N), *i = tex_axis(c, "i", M);
    w->out = tex_compute(c, "B", 2, (tex_iter *[]){j, i}, TEX_AT(A, tex_iv(i), tex_iv(j)));
    return w->out;
}

/* Out[n, c, y, x] = max (or average) over ry, rx < k of X[n, c, y*s + ry, x*s + rx]. */
static inline tex_tensor *ops_pool2d(ops_wl *w, int64_t n, int64_t ch, int64_t h, int64_t wd,
                                     int64_t k, int64_t stride, bool is_max, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *N = tex_int(c, n), *C = ops_size(w, "C", ch, sym), *H = ops_size(w, "H", h, sym);
    tex_expr *W = ops_size(w, "W", wd, sym), *K = tex_int(c, k), *S = tex_int(c, stride);
    tex_tensor *X = ops_input(w, "X", 4, (tex_expr *[]){N, C, H, W});
    tex_expr *OH = tex_add(tex_floordiv(tex_sub(H, K), S), tex_int(c, 1));
    tex_expr *OW = tex_add(tex_floordiv(tex_sub(W, K), S), tex_int(c, 1));
    tex_iter *on = tex_axis(c, "n", N), *oc = tex_axis(c, "c", C), *oy = tex_axis(c, "y", OH);
    tex_iter *ox = tex_axis(c, "x", OW);
    tex_iter *ry = tex_reduce_axis(c, "ry", K), *rx = tex_reduce_axis(c, "rx", K);
    tex_expr *x = TEX_AT(X, tex_iv(on), tex_iv(oc), tex_add(tex_mul(tex_iv(oy), S), tex_iv(ry)),
                         tex_add(tex_mul(tex_iv(ox), S), tex_iv(rx)));
    tex_iter *r[2] = {ry, rx};
    tex_expr *body = is_max ? tex_reduce_max(x, 2, r)
                            : tex_sum(tex_mul(x, ops_f(w, 1.0 / (double)(k * k))), 2, r);
    w->out =
        tex_compute(c, is_max ? "MaxPool" : "AvgPool", 4, (tex_iter *[]){on, oc, oy, ox}, body);
    return w->out;
}

/* T1 = exp(A) * B; T2 = tanh(T1) + C; Out = sigmoid(T2) * A + T1. */
static inline tex_tensor *ops_elemwise(ops_wl *w, int64_t m, int64_t n, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_expr *shape[2] = {M, N};
    tex_tensor *A = ops_input(w, "A", 2, shape), *B = ops_input(w, "B", 2, shape);
    tex_tensor *C = ops_input(w, "C", 2, shape);
    tex_iter *i1 = tex_axis(c, "i", M), *j1 = tex_axis(c, "j", N);
    tex_tensor *T1 = ops_mid(w, tex_compute(c, "T1", 2, (tex_iter *[]){i1, j1},
                                            tex_mul(tex_exp(TEX_AT(A, tex_iv(i1), tex_iv(j1))),
                                                    TEX_AT(B, tex_iv(i1), tex_iv(j1)))));
    tex_iter *i2 = tex_axis(c, "i", M), *j2 = tex_axis(c, "j", N);
    tex_tensor *T2 = ops_mid(w, tex_compute(c, "T2", 2, (tex_iter *[]){i2, j2},
                                            tex_add(tex_tanh(TEX_AT(T1, tex_iv(i2), tex_iv(j2))),
                                                    TEX_AT(C, tex_iv(i2), tex_iv(j2)))));
    tex_iter *i3 = tex_axis(c, "i", M), *j3 = tex_axis(c, "j", N);
    tex_expr *s = tex_sigmoid(TEX_AT(T2, tex_iv(i3), tex_iv(j3)));
    w->out = tex_compute(
        c, "Out", 2, (tex_iter *[]){i3, j3},
        tex_add(tex_mul(s, TEX_AT(A, tex_iv(i3), tex_iv(j3))), TEX_AT(T1, tex_iv(i3), tex_iv(j3))));
    return w->out;
}

/* R[i] = reduce_{j (, l)} X[i, j (, l)] of kind op (0 sum, 1 prod, 2 max,
 * 3 min), restricted to (j + i) % 3 != 1 when `where`. */
static inline tex_tensor *ops_reduce(ops_wl *w, int op, bool where, bool two_axes, int64_t m,
                                     int64_t n, int64_t l, bool sym)
{
    tex_ctx *c = w->ctx;
    tex_expr *M = ops_size(w, "M", m, sym), *N = ops_size(w, "N", n, sym);
    tex_expr *L = tex_int(c, l);
    tex_tensor *X = two_axes ? ops_input(w, "X", 3, (tex_expr *[]){M, N, L})
                             : ops_input(w, "X", 2, (tex_expr *[]){M, N});
    tex_iter *i = tex_axis(c, "i", M), *j = tex_reduce_axis(c, "j", N);
    tex_iter *k = tex_reduce_axis(c, "l", L);
    tex_expr *x =
        two_axes ? TEX_AT(X, tex_iv(i), tex_iv(j), tex_iv(k)) : TEX_AT(X, tex_iv(i), tex_iv(j));
    tex_iter *r[2] = {j, k};
    int nr = two_axes ? 2 : 1;
    tex_expr *red = op == 0   ? tex_sum(x, nr, r)
                    : op == 1 ? tex_reduce_prod(x, nr, r)
                    : op == 2 ? tex_reduce_max(x, nr, r)
                              : tex_reduce_min(x, nr, r);
    if (where)
        red = tex_reduce_where(
            red, tex_ne(tex_floormod(tex_add(tex_iv(j), tex_iv(i)), tex_int(c, 3)), tex_int(c, 1)));
    static const char *const names[4] = {"Sum", "Prod", "Max", "Min"};
    w->out = tex_compute(c, names[op & 3], 1, &i, red);
    return w->out;
}

/* ------------------------------------------------------------- checking */

/* Value of an integer size expression with the workload's variables bound. */
static inline int64_t ops_eval_size(const ops_wl *w, const tex_expr *e)
{
    switch (e->kind) {
    case TEXI_EXPR_INT:
        return e->u.i;
    case TEXI_EXPR_VAR:
        for (int k = 0; k < w->n_vars; k++)
            if (w->vars[k] == e)
                return w->vals[k];
        return -1;
    case TEXI_EXPR_CAST:
        return ops_eval_size(w, e->u.un.a);
    default:
        break;
    }
    if (!texi_expr_is_binary(e))
        return -1;
    int64_t a = ops_eval_size(w, e->u.bin.a), b = ops_eval_size(w, e->u.bin.b);
    switch (e->kind) {
    case TEXI_EXPR_ADD:
        return a + b;
    case TEXI_EXPR_SUB:
        return a - b;
    case TEXI_EXPR_MUL:
        return a * b;
    case TEXI_EXPR_DIV:
    case TEXI_EXPR_FLOORDIV:
        return b ? (a - ((a % b + b) % b)) / b : -1;
    case TEXI_EXPR_FLOORMOD:
        return b ? (a % b + b) % b : -1;
    case TEXI_EXPR_MIN:
        return a < b ? a : b;
    case TEXI_EXPR_MAX:
        return a > b ? a : b;
    default:
        return -1;
    }
}

static inline DLTensor *ops_array_for(const ops_wl *w, const tex_tensor *t)
{
    int64_t shape[8];
    for (int d = 0; d < t->ndim && d < 8; d++)
        shape[d] = ops_eval_size(w, t->shape[d]);
    return tex_array_new(t->ndim, shape, t->dtype, (DLDevice){kDLCPU, 0});
}

static inline int64_t ops_numel(const DLTensor *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++)
        n *= a->shape[d];
    return n;
}

/* The bytes of a's data. */
static inline size_t ops_bytes(const DLTensor *a)
{
    return (size_t)ops_numel(a) * ((size_t)(a->dtype.bits * a->dtype.lanes + 7) / 8);
}

/* Moves a's data into a malloc'ed block of exactly its size (tex_array_new
 * rounds up to 64 bytes), so that AddressSanitizer flags an access past its
 * end; *saved keeps the array's own data. False on ENOMEM. */
static inline bool ops_exact(DLTensor *a, void **saved)
{
    size_t bytes = ops_bytes(a);
    void *block = malloc(bytes ? bytes : 1);
    if (!block)
        return false;
    memcpy(block, a->data, bytes);
    *saved = a->data;
    a->data = block;
    return true;
}

/* Undoes ops_exact: the block's contents back into the array's own data. */
static inline void ops_unexact(DLTensor *a, void *saved)
{
    memcpy(saved, a->data, ops_bytes(a));
    free(a->data);
    a->data = saved;
}

/* Random non-zero values with |x| in [0.5, 1.5] (floats) or in [1, 3] (ints). */
static inline void ops_fill_random(DLTensor *a, tex_dtype t, uint64_t *rng)
{
    int64_t n = ops_numel(a);
    for (int64_t k = 0; k < n; k++) {
        uint64_t r = ops_rand(rng);
        double mag = 0.5 + (double)(r >> 11) / 9007199254740992.0;
        double v = (r & 1) ? -mag : mag;
        int small = (int)((r & 1) ? -1 : 1) * (int)(1 + (r >> 40) % 3); /* non-zero, |x| <= 3 */
        void *p = a->data;
        switch (t) {
        case TEX_F32:
            ((float *)p)[k] = (float)v;
            break;
        case TEX_F64:
            ((double *)p)[k] = v;
            break;
        case TEX_F16:
            ((uint16_t *)p)[k] = texi_f16_from_f32((float)v);
            break;
        case TEX_BF16:
            ((uint16_t *)p)[k] = texi_bf16_from_f32((float)v);
            break;
        case TEX_I8:
            ((int8_t *)p)[k] = (int8_t)small;
            break;
        case TEX_I16:
            ((int16_t *)p)[k] = (int16_t)small;
            break;
        case TEX_I32:
            ((int32_t *)p)[k] = small;
            break;
        case TEX_I64:
            ((int64_t *)p)[k] = small;
            break;
        case TEX_U8:
            ((uint8_t *)p)[k] = (uint8_t)(1 + (r >> 40) % 3);
            break;
        case TEX_U16:
            ((uint16_t *)p)[k] = (uint16_t)(1 + (r >> 40) % 3);
            break;
        case TEX_U32:
            ((uint32_t *)p)[k] = (uint32_t)(1 + (r >> 40) % 3);
            break;
        case TEX_U64:
            ((uint64_t *)p)[k] = 1 + (r >> 40) % 3;
            break;
        default: /* bool */
            ((uint8_t *)p)[k] = (uint8_t)(r & 1);
            break;
        }
    }
}

/* NaN in float outputs, 0xA5 bytes in others. */
static inline void ops_poison(DLTensor *a, tex_dtype t)
{
    int64_t n = ops_numel(a);
    if (t == TEX_F32)
        for (int64_t k = 0; k < n; k++)
            ((float *)a->data)[k] = NAN;
    else if (t == TEX_F64)
        for (int64_t k = 0; k < n; k++)
            ((double *)a->data)[k] = NAN;
    else
        memset(a->data, 0xA5, (size_t)(n * tex_dtype_bytes(t)));
}

static inline double ops_get(const DLTensor *a, tex_dtype t, int64_t k)
{
    const void *p = a->data;
    switch (t) {
    case TEX_F32:
        return ((const float *)p)[k];
    case TEX_F64:
        return ((const double *)p)[k];
    case TEX_F16:
        return texi_f16_to_f32(((const uint16_t *)p)[k]);
    case TEX_BF16:
        return texi_bf16_to_f32(((const uint16_t *)p)[k]);
    case TEX_I8:
        return ((const int8_t *)p)[k];
    case TEX_I16:
        return ((const int16_t *)p)[k];
    case TEX_I32:
        return ((const int32_t *)p)[k];
    case TEX_I64:
        return (double)((const int64_t *)p)[k];
    case TEX_U16:
        return ((const uint16_t *)p)[k];
    case TEX_U32:
        return ((const uint32_t *)p)[k];
    case TEX_U64:
        return (double)((const uint64_t *)p)[k];
    default: /* u8, bool */
        return ((const uint8_t *)p)[k];
    }
}

/* Relative tolerance and absolute floor for dtype t. */
static inline void ops_tolerance(tex_dtype t, double *rtol, double *atol)
{
    *rtol = t == TEX_F64 ? 1e-10 : t == TEX_F32 ? 1e-4 : texi_dtype_is_float(t) ? 1e-2 : 0;
    *atol = t == TEX_F64 ? 1e-10 : t == TEX_F32 ? 1e-4 : texi_dtype_is_float(t) ? 1e-2 : 0;
}

/* Index of the first element where got and want differ beyond the
 * tolerance (NaN never matches; equal infinities do), or -1; the absolute
 * tolerance times atol_scale. */
static inline int64_t ops_compare_scaled(const DLTensor *got, const DLTensor *want, tex_dtype t,
                                         double atol_scale)
{
    double rtol, atol;
    ops_tolerance(t, &rtol, &atol);
    atol *= atol_scale;
    int64_t n = ops_numel(want);
    for (int64_t k = 0; k < n; k++) {
        double g = ops_get(got, t, k), e = ops_get(want, t, k);
        if (g != e && !(fabs(g - e) <= atol + rtol * fabs(e))) /* g == e: equal infinities */
            return k;
    }
    return -1;
}

/* ops_compare_scaled with the dtype's tolerance as it is. */
static inline int64_t ops_compare(const DLTensor *got, const DLTensor *want, tex_dtype t)
{
    return ops_compare_scaled(got, want, t, 1.0);
}

/* The largest finite magnitude in a, at least 1. */
static inline double ops_max_magnitude(const DLTensor *a, tex_dtype t)
{
    double m = 1;
    for (int64_t k = 0; k < ops_numel(a); k++) {
        double v = fabs(ops_get(a, t, k));
        m = isfinite(v) && v > m ? v : m;
    }
    return m;
}

static inline void ops_report(const ops_wl *w, uint64_t seed, const ops_log *log, const tex_func *f,
                              const char *why)
{
    printf("  workload %s, seed %llu: %s\n", w->name, (unsigned long long)seed, why);
    for (int k = 0; k < w->n_vars; k++)
        printf("    size %s = %lld\n", w->vars[k]->u.var.name, (long long)w->vals[k]);
    if (log && log->len)
        printf("  schedule steps:\n%s", log->text);
    char *txt = f ? tex_func_str(f) : NULL;
    if (txt)
        printf("  lowered function:\n%s\n", txt);
    free(txt);
}

/* The outputs of w: out, and out2 when there is one; their count. */
static inline int ops_outputs(const ops_wl *w, tex_tensor *outs[2])
{
    outs[0] = w->out;
    outs[1] = w->out2;
    return w->out2 ? 2 : 1;
}

/* Lowers s (parameters: the inputs, the outputs, then the sizes as VAR
 * parameters when w->var_params, then the scalars). NULL with the message in
 * why on failure. */
static inline tex_func *ops_lower(ops_wl *w, tex_schedule *s, char *why, size_t why_size)
{
    tex_param ps[3 * OPS_MAX + 2];
    tex_tensor *outs[2];
    int n = 0, n_out = ops_outputs(w, outs);
    for (int k = 0; k < w->n_in; k++)
        ps[n++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = w->in[k]};
    for (int k = 0; k < n_out; k++)
        ps[n++] = (tex_param){.kind = TEX_ARG_TENSOR, .t = outs[k]};
    for (int k = 0; w->var_params && k < w->n_vars; k++)
        ps[n++] = (tex_param){.kind = TEX_ARG_VAR, .v = w->vars[k]};
    for (int k = 0; k < w->n_scal; k++)
        ps[n++] = (tex_param){.kind = TEX_ARG_VAR, .v = w->scal[k]};
    tex_func *f = tex_lower(s, w->name, n, ps);
    if (!f)
        snprintf(why, why_size, "tex_lower failed (%d): %s", tex_errcode(w->ctx),
                 tex_errmsg(w->ctx));
    return f;
}

/* The oracle of w's outputs into ref[0..n_out): ts[0..n) the inputs and the
 * outputs, arrs their arrays (the outputs' replaced by ref), vals[0..nv) the
 * kernel's arguments (scalars included). 0 or the oracle's error code. */
static inline int ops_reference(ops_wl *w, tex_tensor *const ts[], DLTensor *const arrs[],
                                DLTensor *const ref[], int n_out, int n, const tex_value vals[],
                                int nv)
{
    DLTensor *rarrs[OPS_MAX + 2];
    memcpy(rarrs, arrs, sizeof rarrs);
    for (int k = 0; k < n_out; k++)
        rarrs[n - n_out + k] = ref[k];
    if (w->n_scal == 0)
        return tex_eval_reference(w->ctx, n, ts, rarrs);
    tex_value rv[3 * OPS_MAX + 2];
    memcpy(rv, vals, sizeof rv[0] * (size_t)nv);
    for (int k = 0; k < n_out; k++)
        rv[n - n_out + k] = (tex_value){.kind = TEX_VAL_TENSOR, .t = ref[k]};
    tex_param ps[3 * OPS_MAX + 2];
    for (int a = 0; a < n; a++)
        ps[a] = (tex_param){.kind = TEX_ARG_TENSOR, .t = ts[a]};
    int nsize = w->var_params ? w->n_vars : 0;
    for (int v = n; v < nv; v++)
        ps[v] = (tex_param){.kind = TEX_ARG_VAR,
                            .v = v - n < nsize ? w->vars[v - n] : w->scal[v - n - nsize]};
    return tex_eval_reference_ex(w->ctx, nv, ps, rv);
}

/* Runs the code under test on vals (the workload's arrays and scalars, in
 * parameter order): 0, or non-zero with a message in err. */
typedef int (*ops_runner)(void *ud, int n, const tex_value vals[], char *err, size_t en);

/* Runs run(ud, ...) on random inputs (seeded by seed; the outputs poisoned)
 * and compares its outputs with the oracle's. `what` prefixes a mismatch
 * message. 0, or -1 with the reason in why. */
static inline int ops_run_with(ops_wl *w, ops_runner run, void *ud, const char *what, uint64_t seed,
                               char *why, size_t why_size)
{
    tex_tensor *outs[2];
    int n_out = ops_outputs(w, outs), n = w->n_in + n_out, rc = -1;
    DLTensor *arrs[OPS_MAX + 2] = {0}, *ref[2] = {0};
    void *saved[OPS_MAX + 2] = {0};
    tex_tensor *ts[OPS_MAX + 2];
    tex_value vals[3 * OPS_MAX + 2];
    uint64_t rng = seed * 7919 + 1;
    for (int a = 0; a < n; a++) {
        ts[a] = a < w->n_in ? w->in[a] : outs[a - w->n_in];
        arrs[a] = ops_array_for(w, ts[a]);
        if (!arrs[a]) {
            snprintf(why, why_size, "cannot allocate the array of '%s'", ts[a]->name);
            goto done;
        }
        if (a < w->n_in)
            ops_fill_random(arrs[a], ts[a]->dtype, &rng);
        else
            ops_poison(arrs[a], ts[a]->dtype);
        if (w->exact && !ops_exact(arrs[a], &saved[a])) {
            snprintf(why, why_size, "cannot allocate the exact array of '%s'", ts[a]->name);
            goto done;
        }
        vals[a] = (tex_value){.kind = TEX_VAL_TENSOR, .t = arrs[a]};
    }
    int nv = n;
    for (int v = 0; w->var_params && v < w->n_vars; v++)
        vals[nv++] = (tex_value){.kind = TEX_VAL_I64, .i = w->vals[v]};
    for (int v = 0; v < w->n_scal; v++)
        vals[nv++] = (tex_value){.kind = TEX_VAL_F64, .f = w->scal_vals[v]};
    char err[1024];
    if (run(ud, nv, vals, err, sizeof err) != 0) {
        snprintf(why, why_size, "%s%s", what, err);
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        ref[k] = ops_array_for(w, outs[k]);
        if (!ref[k]) {
            snprintf(why, why_size, "cannot allocate the reference of '%s'", outs[k]->name);
            goto done;
        }
        ops_poison(ref[k], outs[k]->dtype);
    }
    if (ops_reference(w, ts, arrs, ref, n_out, n, vals, nv) != 0) {
        snprintf(why, why_size, "oracle failed: %s", tex_errmsg(w->ctx));
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        DLTensor *got = arrs[w->n_in + k];
        double scale = w->scaled_atol ? ops_max_magnitude(ref[k], outs[k]->dtype) : 1.0;
        int64_t bad = ops_compare_scaled(got, ref[k], outs[k]->dtype, scale);
        if (bad >= 0) {
            snprintf(why, why_size, "%soutput '%s' differs at flat index %lld: %.9g, oracle %.9g",
                     what, outs[k]->name, (long long)bad, ops_get(got, outs[k]->dtype, bad),
                     ops_get(ref[k], outs[k]->dtype, bad));
            goto done;
        }
    }
    rc = 0;
done:
    for (int a = 0; a < n; a++) {
        if (saved[a])
            ops_unexact(arrs[a], saved[a]);
        tex_array_free(arrs[a]);
    }
    tex_array_free(ref[0]);
    tex_array_free(ref[1]);
    return rc;
}

/* ops_runner: tex_kernel_call of kernel ud. */
static inline int ops_kernel_runner(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    tex_kernel *k = ud;
    if (tex_kernel_call(k, n, vals) == 0)
        return 0;
    snprintf(err, en, "tex_kernel_call failed: %s", tex_kernel_errmsg(k));
    return -1;
}

/* ops_runner: the interpreter on function ud. */
static inline int ops_interp_runner(void *ud, int n, const tex_value vals[], char *err, size_t en)
{
    char msg[1024];
    if (texi_interp_run(ud, n, vals, msg, sizeof msg) == 0)
        return 0;
    snprintf(err, en, "interpreter: %.1000s", msg);
    return -1;
}

/* ops_run_with through the kernel k when one is given, else through the
 * interpreter on f. */
static inline int ops_run_and_compare(ops_wl *w, tex_func *f, tex_kernel *k, const char *what,
                                      uint64_t seed, char *why, size_t why_size)
{
    return k ? ops_run_with(w, ops_kernel_runner, k, what, seed, why, why_size)
             : ops_run_with(w, ops_interp_runner, f, what, seed, why, why_size);
}

/* GPU-scheduled f with thread_sync's barriers (copy's body), for the
 * interpreter, which runs threads that share memory in lock-step only
 * where barriers are; NULL on failure (recorded in f's context). */
static inline tex_func *ops_synced(tex_func *f, tex_func *copy)
{
    texi_lower lw = {f->ctx, NULL, f, false};
    *copy = *f;
    return texi_lower_apply(&lw, "thread_sync", texi_pass_thread_sync, f->body, &copy->body) == 0
               ? copy
               : NULL;
}

/* Interprets f on random inputs and compares its output with the oracle's.
 * 0, or -1 with the reason in why. */
static inline int ops_run_compare(ops_wl *w, tex_func *f, uint64_t seed, char *why, size_t why_size)
{
    return ops_run_and_compare(w, f, NULL, "", seed, why, why_size);
}

/* The whole differential check of schedule s of w: 0 on success, -1 on
 * failure (with a printed report when `report`). */
static inline int ops_check(ops_wl *w, tex_schedule *s, uint64_t seed, const ops_log *log,
                            bool report)
{
    char why[2048];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    if (!f || ops_run_compare(w, f, seed, why, sizeof why) != 0) {
        if (report)
            ops_report(w, seed, log, f, why);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------- JIT (compiled kernels) */

/* Builds f for target ("cpu", "cpu -threads=N"), runs the kernel on the
 * inputs ops_run_compare would use for this seed (the output poisoned) and
 * compares with the oracle. 0, or -1 with the reason in why. */
static inline int ops_jit_compare(ops_wl *w, tex_func *f, const char *target, uint64_t seed,
                                  char *why, size_t why_size)
{
    tex_kernel *k = tex_build(f, target);
    if (!k) {
        snprintf(why, why_size, "tex_build(\"%s\") failed (%d): %s", target, tex_errcode(w->ctx),
                 tex_errmsg(w->ctx));
        return -1;
    }
    char what[128];
    snprintf(what, sizeof what, "%s: ", target);
    int rc = ops_run_and_compare(w, f, k, what, seed, why, why_size);
    tex_kernel_free(k);
    return rc;
}

/* ops_check through the JIT: lower s, build for target, run, compare. */
static inline int ops_check_jit(ops_wl *w, tex_schedule *s, const char *target, uint64_t seed,
                                const ops_log *log, bool report)
{
    char why[2048];
    tex_func *f = ops_lower(w, s, why, sizeof why);
    if (!f || ops_jit_compare(w, f, target, seed, why, sizeof why) != 0) {
        if (report)
            ops_report(w, seed, log, f, why);
        return -1;
    }
    return 0;
}

#endif
