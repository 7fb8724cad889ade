/*
 * The sampled oracle (texi_eval_sample_check, eval.h): a few elements of
 * each listed compute evaluated from the definitions and compared with the
 * caller's arrays. Producers are computed element by element as the sampled
 * points read them (texi_eval_element), each at most once, so checking a
 * GEMM's output at 64 points costs 64 dot products instead of the whole
 * product. It is how the tuner checks kernels whose workload is too large
 * for tex_eval_reference (src/tune/workload.c).
 */
#include "ir/eval.h"

#include <math.h>
#include <stdio.h>

#define CALL "tex_eval_reference (sampled)"

/* splitmix64: the points drawn for a seed are the same on every machine. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Element off of storage k against the caller's array a: false, with why
 * filled, when they differ. */
static bool check_point(texi_eval *st, int32_t k, const DLTensor *a, int64_t off, double tol,
                        char *why, size_t why_size)
{
    const tex_tensor *t = st->store[k].tensor;
    texi_eval_value want = texi_eval_element(st, k, off);
    texi_eval_value got = texi_eval_load(t->dtype, (const char *)a->data + a->byte_offset, off);
    if (st->rc)
        return true; /* the evaluation failed: reported as an error, not a mismatch */
    bool fl = texi_dtype_is_float(t->dtype);
    if (fl ? fabs(got.f - want.f) <= tol * fmax(1.0, fabs(want.f)) : got.i == want.i)
        return true;
    snprintf(why, why_size, "tensor '%s', element %lld: %.9g, the definition gives %.9g", t->name,
             (long long)off, fl ? got.f : (double)got.i, fl ? want.f : (double)want.i);
    return false;
}

int texi_eval_sample_check(tex_ctx *ctx, int n, tex_tensor *const tensors[],
                           DLTensor *const arrays[], int points, int64_t max_work, uint64_t seed,
                           double tol, bool *ok, int *checked, char *why, size_t why_size)
{
    if (!ctx || !ok || !checked)
        return TEX_EMISUSE;
    *ok = true;
    *checked = 0;
    TEXI_TRY(texi_eval_check_list(ctx, CALL, n, tensors, arrays));
    texi_eval st = {.ctx = ctx, .cur = "?"};
    int rc = texi_eval_prepare(&st, n, tensors, arrays, true);
    for (int32_t k = 0; rc == 0 && *ok && k < st.n_store; k++) {
        const texi_eval_storage *s = &st.store[k];
        int i = 0;
        while (i < n && tensors[i] != s->tensor)
            i++;
        if (i == n || s->tensor->op->kind != TEXI_OP_COMPUTE || s->size == 0)
            continue;
        for (int p = 0; *ok && !st.rc && p < points && (p < 2 || st.work < max_work); p++) {
            int64_t off = p == 0   ? 0
                          : p == 1 ? s->size - 1
                                   : (int64_t)(next_random(&seed) % (uint64_t)s->size);
            *ok = check_point(&st, k, arrays[i], off, tol, why, why_size);
            ++*checked;
        }
        rc = st.rc;
    }
    texi_eval_release(&st);
    return rc;
}
