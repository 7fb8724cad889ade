/*
 * Host emulation of CUDA's mma.h (nvcuda::wmma) for the CUDA emulation
 * harness (see tex_cuda_emu.h). Only the 16x16x16 shapes with half or
 * __nv_bfloat16 inputs and float or half accumulators are provided.
 *
 * On a device a fragment is spread over the warp's 32 lanes; here every
 * lane holds the whole tile (num_elements = rows * cols), so elementwise
 * loops over x[0 .. num_elements) still see every element exactly once per
 * lane and all lanes hold equal copies. The operations are warp-collective
 * like the real ones: the warp's lanes meet at a barrier before and after
 * each of them (so a lane's earlier stores are visible to the others and
 * nobody overwrites a tile still being read). load_matrix_sync and
 * mma_sync run in every lane on its own copy (same inputs, same result);
 * store_matrix_sync writes once per warp, from its lowest lane. mma_sync
 * multiplies the 16-bit inputs exactly in float and accumulates in float in
 * k order (the device's accumulation order differs, within rounding).
 */
#ifndef TEX_CUDA_EMU_MMA_H
#define TEX_CUDA_EMU_MMA_H

#include "tex_cuda_emu.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K> struct tile_shape {
    static const int rows = std::is_same<Use, matrix_b>::value ? K : M;
    static const int cols = std::is_same<Use, matrix_a>::value ? K : N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "wmma emulation: only m16n16k16");
    static const int rows = tile_shape<Use, M, N, K>::rows;
    static const int cols = tile_shape<Use, M, N, K>::cols;
    static const int num_elements = rows * cols;
    T x[num_elements];
};

namespace detail {
static inline void warp_meet(const char *what)
{
    tex_emu_detail::warp_barrier(tex_emu_detail::present_lanes(), what);
}
template <typename F, typename T>
static inline void load(F &f, const T *p, unsigned ldm, bool row)
{
    warp_meet("wmma::load_matrix_sync");
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++)
            f.x[r * F::cols + c] = row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    warp_meet("wmma::load_matrix_sync");
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename L, typename V>
static inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v)
{
    for (int i = 0; i < f.num_elements; i++)
        f.x[i] = T(v);
}

template <typename Use, int M, int N, int K, typename T, typename P>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major> &f, const P *p, unsigned ldm)
{
    detail::load(f, p, ldm, true);
}
template <typename Use, int M, int N, int K, typename T, typename P>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major> &f, const P *p, unsigned ldm)
{
    detail::load(f, p, ldm, false);
}
template <int M, int N, int K, typename T, typename P>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const P *p, unsigned ldm,
                                    layout_t layout)
{
    detail::load(f, p, ldm, layout == mem_row_major);
}

template <int M, int N, int K, typename T, typename P>
static inline void store_matrix_sync(P *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                                     layout_t layout)
{
    typedef fragment<accumulator, M, N, K, T> F;
    detail::warp_meet("wmma::store_matrix_sync");
    if (tex_emu_detail::lane == 0)
        for (int r = 0; r < F::rows; r++)
            for (int c = 0; c < F::cols; c++)
                (layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r]) =
                    f.x[r * F::cols + c];
    detail::warp_meet("wmma::store_matrix_sync");
}

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC,
          typename TD>
static inline void mma_sync(fragment<accumulator, M, N, K, TD> &d,
                            const fragment<matrix_a, M, N, K, TA, LA> &a,
                            const fragment<matrix_b, M, N, K, TB, LB> &b,
                            const fragment<accumulator, M, N, K, TC> &c)
{
    detail::warp_meet("wmma::mma_sync");
    float acc[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = float(c.x[i * N + j]);
            for (int k = 0; k < K; k++)
                s += float(a.x[i * K + k]) * float(b.x[k * N + j]);
            acc[i * N + j] = s;
        }
    for (int i = 0; i < M * N; i++)
        d.x[i] = TD(acc[i]);
    detail::warp_meet("wmma::mma_sync");
}

} // namespace wmma
} // namespace nvcuda

#endif
