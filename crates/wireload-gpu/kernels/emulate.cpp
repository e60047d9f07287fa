// The CPU emulator of wireload's CUDA kernels: csv.cu compiled with simt.h, a fiber
// scheduler, and the C entry points src/emulator.rs calls.
#include <stdlib.h>

#include <mutex>
#include <new>

#include "layout.h"
#include "simt.h"
#include "csv.cu"

// ---------------------------------------------------------------------------------------
// Fibers
// ---------------------------------------------------------------------------------------

#if defined(__x86_64__)
// Saves the callee-saved registers, the SSE and x87 control words and the stack pointer
// of the running context in *from, and resumes the context whose stack pointer is `to`.
extern "C" void wl_emu_switch(void** from, void* to);
asm(R"(
.text
.p2align 4
.globl wl_emu_switch
.type wl_emu_switch,@function
wl_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size wl_emu_switch,.-wl_emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");
#else
#include <ucontext.h>
#endif

namespace wl_emu {

State g;

static const size_t STACK = 256 * 1024;

struct Fiber {
    wl_emu_thread_idx tid;
    unsigned phase;
    bool done;
    bool waiting;
    unsigned wait_gen;
    int wait_kind;  // 0: warp, 1: block
#if defined(__x86_64__)
    void* sp;
#else
    ucontext_t ctx;
#endif
    char* stack;
};

struct Warp {
    unsigned long long slot[2][32];
    unsigned arrived;
    unsigned gen;
    unsigned live;
};

struct Block {
    Fiber* fibers;
    Warp* warps;
    unsigned nthreads;
    unsigned arrived;
    unsigned gen;
    unsigned live;
    void (*kernel)(const void*);
    const void* args;
    const char* error;
#if defined(__x86_64__)
    void* sched_sp;
#else
    ucontext_t sched;
#endif
};

static Block b;

static void yield_to_scheduler() {
    Fiber* f = g.cur;
#if defined(__x86_64__)
    wl_emu_switch(&f->sp, b.sched_sp);
#else
    swapcontext(&f->ctx, &b.sched);
#endif
}

void fail(const char* what) {
    if (!b.error) b.error = what;
    // park this fiber for good: the scheduler sees the error and stops the launch
    for (;;) yield_to_scheduler();
}

unsigned lane_of_current() { return g.cur->tid.x & 31u; }

static Warp& cur_warp() { return b.warps[g.cur->tid.x >> 5]; }

unsigned long long& warp_slot(unsigned phase, unsigned lane) { return cur_warp().slot[phase][lane]; }

unsigned& warp_phase() { return g.cur->phase; }

void warp_barrier() {
    Warp& w = cur_warp();
    if (w.live < 32) fail("a warp collective was reached by fewer than 32 lanes");
    unsigned gen = w.gen;
    if (++w.arrived == 32) {
        w.arrived = 0;
        w.gen++;
        return;
    }
    g.cur->waiting = true;
    g.cur->wait_kind = 0;
    g.cur->wait_gen = gen;
    while (w.gen == gen) yield_to_scheduler();
    g.cur->waiting = false;
}

void block_barrier() {
    unsigned gen = b.gen;
    if (++b.arrived == b.live) {
        b.arrived = 0;
        b.gen++;
        return;
    }
    g.cur->waiting = true;
    g.cur->wait_kind = 1;
    g.cur->wait_gen = gen;
    while (b.gen == gen) yield_to_scheduler();
    g.cur->waiting = false;
}

static void fiber_main() {
    b.kernel(b.args);
    Fiber* f = g.cur;
    f->done = true;
    b.live--;
    cur_warp().live--;
    for (;;) yield_to_scheduler();
}

#if !defined(__x86_64__)
static void fiber_entry_uc() { fiber_main(); }
#endif

static void prepare(Fiber* f) {
#if defined(__x86_64__)
    // The stack as wl_emu_switch leaves it: control words, six registers, then the
    // address `ret` jumps to; 16-byte aligned so that fiber_main starts as if called.
    uintptr_t top = ((uintptr_t)(f->stack + STACK)) & ~(uintptr_t)15;
    void** sp = (void**)(top - 16);
    sp[0] = (void*)&fiber_main;
    sp -= 6;
    for (int i = 0; i < 6; i++) sp[i] = 0;
    sp -= 1;
    unsigned mxcsr = 0x1F80;
    unsigned short fpucw = 0x037F;
    memcpy((char*)sp, &mxcsr, 4);
    memcpy((char*)sp + 4, &fpucw, 2);
    f->sp = (void*)sp;
#else
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = STACK;
    f->ctx.uc_link = 0;
    makecontext(&f->ctx, fiber_entry_uc, 0);
#endif
}

static void resume(Fiber* f) {
    g.cur = f;
#if defined(__x86_64__)
    wl_emu_switch(&b.sched_sp, f->sp);
#else
    swapcontext(&b.sched, &f->ctx);
#endif
}

// Runs one block to its end; returns an error message or null.
static const char* run_block() {
    for (unsigned i = 0; i < b.nthreads; i++) {
        Fiber* f = &b.fibers[i];
        f->tid.x = i;
        f->tid.y = 0;
        f->tid.z = 0;
        f->phase = 0;
        f->done = false;
        f->waiting = false;
        prepare(f);
    }
    for (unsigned w = 0; w < b.nthreads / 32; w++) {
        b.warps[w].arrived = 0;
        b.warps[w].gen = 0;
        b.warps[w].live = 32;
    }
    b.arrived = 0;
    b.gen = 0;
    b.live = b.nthreads;
    for (;;) {
        bool any = false;
        bool progress = false;
        for (unsigned i = 0; i < b.nthreads; i++) {
            Fiber* f = &b.fibers[i];
            if (f->done) continue;
            any = true;
            bool was_waiting = f->waiting;
            unsigned gen_before = was_waiting
                                      ? (f->wait_kind == 0 ? b.warps[i >> 5].gen : b.gen)
                                      : 0;
            bool released = was_waiting && gen_before != f->wait_gen;
            resume(f);
            if (b.error) return b.error;
            if (!was_waiting || released || f->done || !f->waiting) progress = true;
        }
        if (!any) return 0;
        if (!progress) return "deadlock: threads wait at a barrier that not all of them reach";
    }
}

static std::mutex launch_lock;

}  // namespace wl_emu

static thread_local wl_emu_thread_idx wl_emu_no_fiber;

wl_emu_thread_idx& wl_emu_tid() {
    return wl_emu::g.cur ? wl_emu::g.cur->tid : wl_emu_no_fiber;
}

// ---------------------------------------------------------------------------------------
// The kernel table and the C entry points
// ---------------------------------------------------------------------------------------

#define WL_THUNK(name, Args) \
    [](const void* a) { name(*(const Args*)a); }

typedef void (*Thunk)(const void*);
static const Thunk WL_TABLE[WL_KERNELS] = {
    WL_THUNK(wl_count, CountArgs),
    WL_THUNK(wl_scan_partial, ScanArgs),
    WL_THUNK(wl_scan_finish, ScanArgs),
    WL_THUNK(wl_index_fast, IndexFastArgs),
    WL_THUNK(wl_index_quoted, IndexQuotedArgs),
    WL_THUNK(wl_compact_count, CompactCountArgs),
    WL_THUNK(wl_compact_scatter, CompactScatterArgs),
    WL_THUNK(wl_fields_quoted, FieldsQuotedArgs),
    WL_THUNK(wl_deserialize, DeserializeArgs),
    WL_THUNK(wl_string_lengths, StringArgs),
    WL_THUNK(wl_offsets_partial, OffsetsArgs),
    WL_THUNK(wl_offsets_finish, OffsetsArgs),
    WL_THUNK(wl_string_gather, StringArgs),
};

// Runs kernel `kernel` over a grid of gx x gy x gz blocks of `threads` threads with the
// argument struct at `args`. Returns 0, or 1 with a message in err.
extern "C" int wl_emu_launch(unsigned kernel, unsigned gx, unsigned gy, unsigned gz,
                             unsigned threads, const void* args, char* err, size_t errlen) {
    using namespace wl_emu;
    auto fail_with = [&](const char* msg) {
        if (errlen) {
            strncpy(err, msg, errlen - 1);
            err[errlen - 1] = 0;
        }
        return 1;
    };
    if (kernel >= WL_KERNELS) return fail_with("no such kernel");
    if (threads == 0 || threads % 32 != 0 || threads > WL_MAX_BLOCK)
        return fail_with("threads per block must be a multiple of 32, at most 256");
    std::lock_guard<std::mutex> lock(launch_lock);
    b.nthreads = threads;
    b.kernel = WL_TABLE[kernel];
    b.args = args;
    b.error = 0;
    b.fibers = new (std::nothrow) Fiber[threads];
    b.warps = new (std::nothrow) Warp[threads / 32];
    if (!b.fibers || !b.warps) return fail_with("out of memory");
    for (unsigned i = 0; i < threads; i++) {
        b.fibers[i].stack = (char*)malloc(STACK);
        if (!b.fibers[i].stack) return fail_with("out of memory");
    }
    g.block_dim = dim3{threads, 1, 1};
    g.grid_dim = dim3{gx, gy, gz};
    const char* error = 0;
    for (unsigned z = 0; z < gz && !error; z++)
        for (unsigned y = 0; y < gy && !error; y++)
            for (unsigned x = 0; x < gx && !error; x++) {
                g.block_idx = dim3{x, y, z};
                error = run_block();
            }
    g.cur = 0;
    for (unsigned i = 0; i < threads; i++) free(b.fibers[i].stack);
    delete[] b.fibers;
    delete[] b.warps;
    if (error) return fail_with(error);
    return 0;
}

// Sizes and field offsets of the shared structs, for the layout test.
extern "C" unsigned wl_emu_layout(unsigned* out, unsigned cap) {
    unsigned v[] = {
        (unsigned)sizeof(ChunkCount),
        (unsigned)sizeof(Span),
        (unsigned)sizeof(Fallback),
        (unsigned)offsetof(Fallback, start),
        (unsigned)offsetof(Fallback, text),
        (unsigned)sizeof(Status),
        (unsigned)sizeof(ColumnDesc),
        (unsigned)offsetof(ColumnDesc, tape),
        (unsigned)offsetof(ColumnDesc, offsets),
        (unsigned)sizeof(KDialect),
        (unsigned)offsetof(KDialect, null),
        (unsigned)sizeof(CountArgs),
        (unsigned)offsetof(CountArgs, d),
        (unsigned)sizeof(ScanArgs),
        (unsigned)sizeof(IndexFastArgs),
        (unsigned)offsetof(IndexFastArgs, d),
        (unsigned)sizeof(IndexQuotedArgs),
        (unsigned)offsetof(IndexQuotedArgs, d),
        (unsigned)sizeof(CompactCountArgs),
        (unsigned)sizeof(CompactScatterArgs),
        (unsigned)sizeof(FieldsQuotedArgs),
        (unsigned)offsetof(FieldsQuotedArgs, d),
        (unsigned)sizeof(DeserializeArgs),
        (unsigned)sizeof(StringArgs),
        (unsigned)offsetof(StringArgs, d),
        (unsigned)sizeof(OffsetsArgs),
    };
    unsigned n = sizeof(v) / sizeof(v[0]);
    for (unsigned i = 0; i < n && i < cap; i++) out[i] = v[i];
    return n;
}
