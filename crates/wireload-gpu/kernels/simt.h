// Runs CUDA kernels on the CPU, for tests on machines without a GPU.
//
// Every GPU thread of a block is a fiber (its own stack, switched in user space); one OS
// thread runs the fibers of a block round-robin until each reaches a barrier
// (__syncthreads, or any warp collective, which waits for the warp's 32 lanes) or ends.
// Blocks run one after another, so `__shared__` variables can be plain statics. Launches
// are serialized by a lock.
//
// What this checks: the kernels' arithmetic, indexing and use of warp collectives (a
// collective with a partial mask, or called by fewer than all lanes of a warp, is
// reported as an error instead of hanging). What it cannot check: timing, memory-model
// races, and anything about the real GPU's resources.
#ifndef WL_SIMT_H
#define WL_SIMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __constant__
#define __launch_bounds__(...)
#define __restrict__

struct dim3 {
    unsigned x, y, z;
};

namespace wl_emu {

struct Fiber;

// Where the running block and fiber are.
struct State {
    dim3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
    Fiber* cur;
};
extern State g;

unsigned lane_of_current();
void warp_barrier();
void block_barrier();
void fail(const char* what);
unsigned long long& warp_slot(unsigned phase, unsigned lane);
unsigned& warp_phase();

}  // namespace wl_emu

struct wl_emu_thread_idx {
    unsigned x, y, z;
};
wl_emu_thread_idx& wl_emu_tid();

#define threadIdx (wl_emu_tid())
#define blockIdx (wl_emu::g.block_idx)
#define blockDim (wl_emu::g.block_dim)
#define gridDim (wl_emu::g.grid_dim)

inline void __syncthreads() { wl_emu::block_barrier(); }

inline void wl_emu_check_mask(unsigned mask) {
    if (mask != 0xffffffffu) wl_emu::fail("a warp collective was called with a partial mask");
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
    wl_emu_check_mask(mask);
    wl_emu::warp_barrier();
}

// A warp exchange: every lane posts `v`, the warp meets, each lane reads its source.
// Two slot sets alternate, so one barrier per exchange suffices: a lane can only post into
// a set again after the next barrier, which every lane reaches only after its read.
template <class T>
inline T wl_emu_exchange(T v, unsigned src) {
    static_assert(sizeof(T) <= 8, "warp exchange of at most 8 bytes");
    unsigned& phase = wl_emu::warp_phase();
    unsigned p = phase;
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    wl_emu::warp_slot(p, wl_emu::lane_of_current()) = bits;
    wl_emu::warp_barrier();
    unsigned long long got = wl_emu::warp_slot(p, src & 31u);
    phase = p ^ 1u;
    T r;
    memcpy(&r, &got, sizeof(T));
    return r;
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    wl_emu_check_mask(mask);
    unsigned lane = wl_emu::lane_of_current();
    unsigned s = (lane & ~(unsigned)(width - 1)) + ((unsigned)src & (unsigned)(width - 1));
    return wl_emu_exchange(v, s);
}

template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    wl_emu_check_mask(mask);
    unsigned lane = wl_emu::lane_of_current();
    unsigned seg = lane & (unsigned)(width - 1);
    unsigned s = seg >= delta ? lane - delta : lane;
    return wl_emu_exchange(v, s);
}

template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    wl_emu_check_mask(mask);
    unsigned lane = wl_emu::lane_of_current();
    unsigned seg = lane & (unsigned)(width - 1);
    unsigned s = seg + delta < (unsigned)width ? lane + delta : lane;
    return wl_emu_exchange(v, s);
}

template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    wl_emu_check_mask(mask);
    unsigned lane = wl_emu::lane_of_current();
    unsigned s = lane ^ (unsigned)lane_mask;
    if ((s & ~(unsigned)(width - 1)) != (lane & ~(unsigned)(width - 1))) s = lane;
    return wl_emu_exchange(v, s);
}

inline unsigned __ballot_sync(unsigned mask, int pred) {
    wl_emu_check_mask(mask);
    unsigned& phase = wl_emu::warp_phase();
    unsigned p = phase;
    unsigned lane = wl_emu::lane_of_current();
    wl_emu::warp_slot(p, lane) = pred ? 1u : 0u;
    wl_emu::warp_barrier();
    unsigned r = 0;
    for (unsigned l = 0; l < 32; l++) r |= (unsigned)(wl_emu::warp_slot(p, l) & 1u) << l;
    phase = p ^ 1u;
    return r;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
template <class T>
inline T __ldg(const T* p) {
    return *p;
}

// Atomics: the fibers of a block run on one OS thread and blocks one after another, so
// plain read-modify-writes are atomic here.
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    unsigned old = *p;
    *p = old + v;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p;
    *p = old + v;
    return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}
inline unsigned atomicMin(unsigned* p, unsigned v) {
    unsigned old = *p;
    if (v < old) *p = v;
    return old;
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
    unsigned old = *p;
    if (v > old) *p = v;
    return old;
}
inline unsigned atomicOr(unsigned* p, unsigned v) {
    unsigned old = *p;
    *p = old | v;
    return old;
}
inline void __threadfence() {}

#endif
