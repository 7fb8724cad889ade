/*
 * Call-time checks of the index arrays of sparse formats (src/sparse): an
 * argument whose placeholder has an index role (ir.h, enum texi_index_role)
 * is scanned before the kernel runs, so a malformed CSR never makes a
 * kernel read or write out of bounds, and a refused call writes nothing.
 *   INDPTR   indptr[0] == 0, indptr[r] <= indptr[r + 1], and the last entry
 *            equals the bound (the number of non-zeros the other arrays hold);
 *   INDICES  0 <= indices[p] < bound (the axis length); when the kernel
 *            searches them (tex_sp_at at other axes), strictly increasing
 *            within each row: the rows of the axis's indptr argument (checked
 *            first), or of its fixed length.
 * The bound is a size program over the call's size table (signature.c).
 * Only host arrays are scanned: CUDA device memory is not read back here.
 * Every call of a sparse kernel pays for these scans, so each is first one
 * pass without a branch per entry (all_within, increasing; the compiler
 * vectorizes them), and the entry to report is looked for only when that
 * pass fails. On x86-64 those passes are also compiled for AVX2 and
 * AVX-512, and the loader picks the widest the processor has (SCAN_CLONES):
 * SSE2, the library's baseline, has no unsigned 32-bit max and emulates it
 * in five instructions, which made the scan of a 1M-non-zero SpMM's indices
 * cost about a fifth of the kernel's own time.
 */
#include "rt/backend.h"

/* The entries of index array t (parameter i): *a32 when they are i32,
 * else *a64 (src/sparse makes no other type); the other one is NULL. */
static void entries(const tex_kernel *k, int i, const DLTensor *t, const int32_t **a32,
                    const int64_t **a64)
{
    const void *base = (const char *)t->data + t->byte_offset;
    bool wide = k->params[i].dtype == TEX_I64;
    *a32 = wide ? NULL : (const int32_t *)base;
    *a64 = wide ? (const int64_t *)base : NULL;
}

/* Element p of an integer index array. */
static int64_t index_at(const tex_kernel *k, int i, const DLTensor *t, int64_t p)
{
    const int32_t *a32;
    const int64_t *a64;
    entries(k, i, t, &a32, &a64);
    return a32 ? a32[p] : a64[p];
}

#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 14) ||                       \
                            (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define SCAN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SCAN_CLONES
#endif

enum { BLOCK = 64 }; /* a fixed trip count, which GCC vectorizes even at -O2 */

/* The scans, one per entry type T (U: T as unsigned), each over blocks of
 * BLOCK, then the rest:
 *   NAME_max:      the largest of a[0 .. n) as unsigned (a negative entry
 *                  counts as more than any non-negative one), 0 when n is 0;
 *   NAME_descends: whether a[p + 1] < a[p] (with strict, <=) somewhere. */
#define DEFINE_SCANS(NAME, T, U)                                                                   \
    SCAN_CLONES static U NAME##_max(const T *a, int64_t n)                                         \
    {                                                                                              \
        U m = 0;                                                                                   \
        int64_t p = 0;                                                                             \
        for (; p + BLOCK <= n; p += BLOCK)                                                         \
            for (int k = 0; k < BLOCK; k++)                                                        \
                m = (U)a[p + k] > m ? (U)a[p + k] : m;                                             \
        for (; p < n; p++)                                                                         \
            m = (U)a[p] > m ? (U)a[p] : m;                                                         \
        return m;                                                                                  \
    }                                                                                              \
    SCAN_CLONES static bool NAME##_descends(const T *a, int64_t n, int strict)                     \
    {                                                                                              \
        int bad = 0;                                                                               \
        int64_t p = 0;                                                                             \
        for (; p + BLOCK + 1 <= n; p += BLOCK)                                                     \
            for (int k = 0; k < BLOCK; k++)                                                        \
                bad |= (a[p + k + 1] < a[p + k]) | (strict & (a[p + k + 1] == a[p + k]));          \
        for (; p + 1 < n; p++)                                                                     \
            bad |= (a[p + 1] < a[p]) | (strict & (a[p + 1] == a[p]));                              \
        return bad;                                                                                \
    }

DEFINE_SCANS(i32, int32_t, uint32_t)
DEFINE_SCANS(i64, int64_t, uint64_t)

/* Whether entries [0, n) of t all lie in [0, bound). */
static bool all_within(const tex_kernel *k, int i, const DLTensor *t, int64_t n, int64_t bound)
{
    const int32_t *a32;
    const int64_t *a64;
    entries(k, i, t, &a32, &a64);
    if (n == 0)
        return true;
    int64_t limit = bound < ((int64_t)1 << 31) ? bound : (int64_t)1 << 31; /* of an i32 entry */
    if (a32)
        return limit > 0 && i32_max(a32, n) < (uint64_t)limit;
    return i64_max(a64, n) < (uint64_t)bound;
}

/* Whether entries [lo, hi) of t increase (strictly, or never decrease). */
static bool increasing(const tex_kernel *k, int i, const DLTensor *t, int64_t lo, int64_t hi,
                       bool strict)
{
    const int32_t *a32;
    const int64_t *a64;
    entries(k, i, t, &a32, &a64);
    if (hi - lo < 2)
        return true;
    return a32 ? !i32_descends(a32 + lo, hi - lo, strict)
               : !i64_descends(a64 + lo, hi - lo, strict);
}

static int check_indptr(tex_kernel *k, int i, const DLTensor *t, int64_t n, int64_t bound)
{
    const char *name = k->params[i].name;
    if (n == 0 || index_at(k, i, t, 0) != 0)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "argument %d (indptr '%s'): the first entry must be 0, got %lld", i,
                                name, n ? (long long)index_at(k, i, t, 0) : -1LL);
    bool ok = increasing(k, i, t, 0, n, false);
    for (int64_t r = 0; !ok && r + 1 < n; r++) {
        int64_t a = index_at(k, i, t, r), b = index_at(k, i, t, r + 1);
        if (b < a)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (indptr '%s'): not monotone at entry %lld "
                                    "(%lld, then %lld)",
                                    i, name, (long long)r, (long long)a, (long long)b);
    }
    int64_t last = index_at(k, i, t, n - 1);
    if (last != bound)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "argument %d (indptr '%s'): the last entry is %lld, but the "
                                "non-zeros number %lld",
                                i, name, (long long)last, (long long)bound);
    return 0;
}

static int check_indices(tex_kernel *k, int i, const DLTensor *t, int64_t n, int64_t bound)
{
    if (all_within(k, i, t, n, bound))
        return 0;
    for (int64_t p = 0; p < n; p++) {
        int64_t v = index_at(k, i, t, p);
        if (v < 0 || v >= bound)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (indices '%s'): entry %lld is %lld, outside "
                                    "[0, %lld)",
                                    i, k->params[i].name, (long long)p, (long long)v,
                                    (long long)bound);
    }
    return 0;
}

/* Indices t of parameter i strictly increasing within each row [lo, hi). */
static int check_row(tex_kernel *k, int i, const DLTensor *t, int64_t r, int64_t lo, int64_t hi)
{
    if (increasing(k, i, t, lo, hi, true))
        return 0;
    for (int64_t p = lo; p + 1 < hi; p++) {
        int64_t a = index_at(k, i, t, p), b = index_at(k, i, t, p + 1);
        if (b <= a)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (indices '%s'): row %lld is not sorted (entry "
                                    "%lld is %lld, then %lld); the kernel searches it, so each "
                                    "row must be strictly increasing",
                                    i, k->params[i].name, (long long)r, (long long)p, (long long)a,
                                    (long long)b);
    }
    return 0;
}

/* The rows of a searched indices argument: by its indptr argument (already
 * checked) or its fixed row length. */
static int check_sorted(tex_kernel *k, int i, const tex_value args[], const int64_t *sizes)
{
    const texi_kernel_param *p = &k->params[i];
    const DLTensor *t = args[i].t;
    int64_t n = t->ndim == 1 ? t->shape[0] : 0, len = 0;
    if (p->rows_param >= 0) {
        const DLTensor *ip = args[p->rows_param].t;
        if (ip->device.device_type != kDLCPU)
            return 0;
        for (int64_t r = 0; r + 1 < ip->shape[0]; r++)
            TEXI_TRY(check_row(k, i, t, r, index_at(k, p->rows_param, ip, r),
                               index_at(k, p->rows_param, ip, r + 1)));
        return 0;
    }
    if (!p->row_len_ok || texi_launch_prog_eval(&p->row_len, sizes, &len) != 0)
        return texi_kernel_fail(k, TEX_EINVAL,
                                "argument %d (indices '%s'): the length of its rows cannot be "
                                "evaluated from the sizes",
                                i, p->name);
    for (int64_t r = 0; len > 0 && r * len < n; r++)
        TEXI_TRY(check_row(k, i, t, r, r * len, (r + 1) * len < n ? (r + 1) * len : n));
    return 0;
}

int texi_kernel_check_index_args(tex_kernel *k, const tex_value args[], const int64_t *sizes)
{
    for (int i = 0; i < k->n_params; i++) {
        const texi_kernel_param *p = &k->params[i];
        if (p->kind == TEX_ARG_VAR || p->index_role == TEXI_INDEX_NONE)
            continue;
        const DLTensor *t = args[i].t;
        int64_t bound;
        if (t->device.device_type != kDLCPU)
            continue;
        if (!p->index_ok || texi_launch_prog_eval(&p->index_bound, sizes, &bound) != 0)
            return texi_kernel_fail(k, TEX_EINVAL,
                                    "argument %d (tensor '%s'): the bound of its entries cannot "
                                    "be evaluated from the sizes",
                                    i, p->name);
        int64_t n = t->ndim == 1 ? t->shape[0] : 0;
        TEXI_TRY(p->index_role == TEXI_INDEX_INDPTR ? check_indptr(k, i, t, n, bound)
                                                    : check_indices(k, i, t, n, bound));
    }
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind != TEX_ARG_VAR && k->params[i].sorted &&
            args[i].t->device.device_type == kDLCPU)
            TEXI_TRY(check_sorted(k, i, args, sizes));
    return 0;
}
