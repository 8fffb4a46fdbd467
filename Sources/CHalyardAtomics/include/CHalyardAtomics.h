// CHalyardAtomics: the few atomic primitives Halyard's read path needs, as static inline C.
//
// Why C and not Synchronization.Atomic: `Atomic` needs macOS 15 / iOS 18 / tvOS 18 / watchOS 11,
// and Halyard supports macOS 13 / iOS 15 / tvOS 15 / watchOS 8 like the peer SDKs; no Swift file
// uses `Synchronization` (PlatformAvailabilityTests fails on a use outside `@available`). These inline functions compile to the same instructions
// (plain loads and stores for acquire/release/relaxed on x86-64 and arm64) and are inlined into
// Swift callers by the Clang importer, so they cost nothing extra. Plain (non-_Atomic) fields
// accessed only through __atomic builtins are race-free for ThreadSanitizer.
//
// Also here: the per-thread hazard records of the snapshot store's reclamation scheme
// (docs/architecture.md, "Snapshot store and memory reclamation").
#ifndef CHALYARD_ATOMICS_H
#define CHALYARD_ATOMICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#if defined(__cplusplus)
extern "C" {
#endif

// MARK: - Word atomics

/// One machine word, accessed only atomically. Allocate it (in Swift) and never move it.
typedef struct { uintptr_t value; } hal_atomic_word;

static inline uintptr_t hal_load_acquire(const hal_atomic_word *w) {
    return __atomic_load_n(&w->value, __ATOMIC_ACQUIRE);
}
static inline uintptr_t hal_load_relaxed(const hal_atomic_word *w) {
    return __atomic_load_n(&w->value, __ATOMIC_RELAXED);
}
static inline void hal_store_release(hal_atomic_word *w, uintptr_t v) {
    __atomic_store_n(&w->value, v, __ATOMIC_RELEASE);
}
static inline void hal_store_relaxed(hal_atomic_word *w, uintptr_t v) {
    __atomic_store_n(&w->value, v, __ATOMIC_RELAXED);
}
static inline uintptr_t hal_exchange(hal_atomic_word *w, uintptr_t v) {
    return __atomic_exchange_n(&w->value, v, __ATOMIC_ACQ_REL);
}
static inline bool hal_compare_exchange(hal_atomic_word *w, uintptr_t *expected, uintptr_t desired) {
    return __atomic_compare_exchange_n(&w->value, expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline uintptr_t hal_fetch_add(hal_atomic_word *w, uintptr_t delta) {
    return __atomic_fetch_add(&w->value, delta, __ATOMIC_RELAXED);
}
/// 8-byte alignment for a 64-bit field where the ABI gives less (i386 aligns a `uint64_t` member
/// to 4, and its atomic accesses would then not be single instructions); nothing on 64-bit
/// targets, whose ABI already aligns it so (the layout checks at the end assert both).
#if UINTPTR_MAX != UINT64_MAX
#define HAL_ALIGN8 _Alignas(8)
#else
#define HAL_ALIGN8
#endif

/// A 64-bit word accessed only atomically (fixed width on every platform, also where
/// `uintptr_t` is 32 bits, e.g. watchOS arm64_32).
/// Aligned to 8 bytes everywhere (``HAL_ALIGN8``), so its atomic accesses are single
/// instructions, never a lock.
typedef struct { HAL_ALIGN8 uint64_t value; } hal_atomic_u64;

static inline uint64_t hal_load_relaxed_u64(const hal_atomic_u64 *w) {
    return __atomic_load_n(&w->value, __ATOMIC_RELAXED);
}
static inline void hal_store_relaxed_u64(hal_atomic_u64 *w, uint64_t v) {
    __atomic_store_n(&w->value, v, __ATOMIC_RELAXED);
}
static inline uint64_t hal_load_acquire_u64(const hal_atomic_u64 *w) {
    return __atomic_load_n(&w->value, __ATOMIC_ACQUIRE);
}
static inline void hal_store_release_u64(hal_atomic_u64 *w, uint64_t v) {
    __atomic_store_n(&w->value, v, __ATOMIC_RELEASE);
}
static inline bool hal_compare_exchange_u64(hal_atomic_u64 *w, uint64_t *expected, uint64_t desired) {
    return __atomic_compare_exchange_n(&w->value, expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/// The two words every reader of a snapshot store loads: the current snapshot pointer and the
/// generation. Each sits alone on its own 128-byte block (two cache lines: x86's adjacent-line
/// prefetcher pairs lines) so no unrelated write, and not each other's, invalidates the line
/// readers keep in their caches. Allocate with `hal_store_words_allocate`.
typedef struct {
    hal_atomic_word current;
    char padding0[128 - sizeof(hal_atomic_word)];
    hal_atomic_word generation;
    char padding1[128 - sizeof(hal_atomic_word)];
} hal_store_words;

/// A zeroed, 128-byte aligned `hal_store_words` (aborts when out of memory). Free with `free`.
hal_store_words *hal_store_words_allocate(void);
void hal_store_words_free(hal_store_words *words);

static inline void hal_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static inline void hal_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static inline void hal_fence_seq_cst(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// MARK: - Hazard records

/// One thread's hazard slot. Padded to two cache lines so no two threads' slots share a line
/// (adjacent-line prefetch pairs lines on x86).
typedef struct hal_hazard_record {
    uintptr_t hazard;                 // the protected pointer, 0 when the thread protects nothing
    uintptr_t in_use;                 // 1 while a live thread owns this record
    struct hal_hazard_record *next;   // immutable once published in the global list
    char padding[128 - 3 * sizeof(uintptr_t)];
} hal_hazard_record;

/// 1 when the process-wide asymmetric heavy barrier (Linux membarrier) is in use; then the
/// reader side needs only a compiler barrier. Set once by hal_hazard_initialize() before any
/// store exists and never changed afterwards.
extern int hal_hazard_asymmetric;

/// Initializes the hazard domain (idempotent, thread-safe). Call before the first protect.
///
/// The fence mode is chosen here, once per process: the environment variable `HALYARD_FENCE`
/// may be `symmetric` (a seq_cst fence on every read, the path Apple platforms run) or
/// `membarrier` (the default on Linux: asymmetric fences; falls back to symmetric when the
/// kernel refuses the registration). Tests use it to run the stress suites in both modes.
void hal_hazard_initialize(void);

/// The fence mode in use: 0 symmetric, 1 asymmetric (membarrier). Initializes the domain.
int hal_hazard_fence_mode(void);

/// The calling thread's record, taken from the free list or allocated on first use. The record
/// returns to the free list when the thread exits.
hal_hazard_record *hal_hazard_record_slow(void);

#if defined(__linux__) && !defined(HAL_NO_INITIAL_EXEC_TLS)
extern __thread hal_hazard_record *hal_hazard_current __attribute__((tls_model("initial-exec")));
#else
extern __thread hal_hazard_record *hal_hazard_current;
#endif

/// The calling thread's hazard record (fast path: one thread-local load).
static inline hal_hazard_record *hal_hazard_record_for_current_thread(void) {
    hal_hazard_record *record = hal_hazard_current;
    if (__builtin_expect(record != 0, 1)) return record;
    return hal_hazard_record_slow();
}

/// The light half of the asymmetric fence pair.
static inline void hal_hazard_light_fence(void) {
    if (__builtin_expect(hal_hazard_asymmetric, 1)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);   // compiler barrier only
    } else {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

/// Loads the pointer in `source` and publishes it in the record's hazard slot so no reclaimer
/// frees it until hal_hazard_clear. Returns the protected pointer (may be 0).
static inline uintptr_t hal_hazard_protect(hal_hazard_record *record, const hal_atomic_word *source) {
    uintptr_t pointer = __atomic_load_n(&source->value, __ATOMIC_ACQUIRE);
    for (;;) {
        __atomic_store_n(&record->hazard, pointer, __ATOMIC_RELAXED);
        hal_hazard_light_fence();
        uintptr_t again = __atomic_load_n(&source->value, __ATOMIC_ACQUIRE);
        if (__builtin_expect(again == pointer, 1)) return pointer;
        pointer = again;
    }
}

/// Whether the record protects nothing now (debug builds check it before every protect: a
/// thread must never protect twice, or the inner read's clear would end the outer protection).
static inline bool hal_hazard_is_clear(const hal_hazard_record *record) {
    return __atomic_load_n(&record->hazard, __ATOMIC_RELAXED) == 0;
}

/// Ends the protection started by hal_hazard_protect.
///
/// The empty asm statement (which may read and write any memory) comes first so no retain of
/// an object reached through the protected snapshot is moved after the store: the release
/// ordering of an atomic store binds loads and stores, but Swift's LLVM-level ARC optimizer
/// moves a `swift_retain` down past plain and atomic stores alike (it was seen doing so: a
/// detail read retained its `EvaluationDetail` after this store, a use-after-free once the
/// snapshot was reclaimed). An opaque asm statement is a call it does not see through.
static inline void hal_hazard_clear(hal_hazard_record *record) {
    __asm__ __volatile__("" ::: "memory");
    __atomic_store_n(&record->hazard, 0, __ATOMIC_RELEASE);
}

/// The heavy half of the fence pair: after it returns, every hazard a reader published before
/// its re-validation load is visible to the caller. Costs a membarrier system call (a few
/// microseconds) when asymmetric, a full fence otherwise. Returns false only if the system call
/// unexpectedly failed; the caller must then not reclaim anything this round.
bool hal_hazard_heavy_fence(void);

/// Writes up to `capacity` currently published hazards into `out` and returns how many there
/// are in total (call again with a larger buffer when the result exceeds `capacity`).
/// Call after hal_hazard_heavy_fence().
intptr_t hal_hazard_collect(uintptr_t *out, intptr_t capacity);

/// How many records exist (live threads plus free records), for tests and stats.
intptr_t hal_hazard_record_count(void);

// MARK: - Handle cache (a seqlock)

/// A handle's cached resolution: which snapshot generation it was resolved against, the scalar
/// value bits and the outcome. Written rarely (once per snapshot change, by whichever reader
/// notices first), read on every handle read with plain loads. A seqlock: `seq` is odd while a
/// writer is updating; readers retry (fall back to the slow path) when they see it move.
/// Allocated once per (client, key, type), 64-byte aligned, and never freed (handles are plain
/// values holding its address; see docs/architecture.md, "Handles").
typedef struct {
    uintptr_t seq;
    uintptr_t generation;
    HAL_ALIGN8 uint64_t bits;
    uintptr_t info;
    /// Exposure mark: (coarse second until which no record is needed) << 32 | (low 32 bits of
    /// the generation it was set for). Fixed 64 bits on every platform.
    hal_atomic_u64 exposed_until;
    /// The cache's owner (an immortal Swift object), unretained: slow paths start from it.
    const void *owner;
} hal_handle_cache;

/// What ``hal_handle_cache_answer`` read: `info` is `UINTPTR_MAX` when there was no consistent
/// answer for the generation (an info word is an outcome and an index, never all ones).
typedef struct {
    uint64_t bits;
    uintptr_t info;
} hal_handle_answer;

/// The seqlock's loads, written once for both readers below, each of which tests them in the
/// shape its caller compiles best (a handle's early-exit branch, the keyed path's branch-free
/// select). A macro, not a function returning a struct: the loads must land in registers of
/// the reader (a returned struct of atomically loaded fields measured 0.2 ns slower per handle
/// read, its fields kept in memory).
///
/// Ordering, against ``hal_handle_cache_write``: the first `seq` load is an acquire (the data
/// loads may not move above it; seeing a writer's closing release store of an even `seq`
/// makes that writer's data visible); the acquire fence keeps the data loads above the second,
/// relaxed `seq` load, so a writer whose data they saw any of has moved `seq` by then (its odd
/// `seq` is ordered before its data by its release fence). The read is consistent when both
/// `seq` loads are equal and even.
#define HAL_HANDLE_CACHE_LOADS(cache, s1, g, b, i, s2)                  \
    uintptr_t s1 = __atomic_load_n(&(cache)->seq, __ATOMIC_ACQUIRE);    \
    uintptr_t g = __atomic_load_n(&(cache)->generation, __ATOMIC_RELAXED); \
    uint64_t b = __atomic_load_n(&(cache)->bits, __ATOMIC_RELAXED);     \
    uintptr_t i = __atomic_load_n(&(cache)->info, __ATOMIC_RELAXED);    \
    __atomic_thread_fence(__ATOMIC_ACQUIRE);                            \
    uintptr_t s2 = __atomic_load_n(&(cache)->seq, __ATOMIC_RELAXED)

static inline hal_handle_answer hal_handle_cache_answer(const hal_handle_cache *cache, uintptr_t generation) {
    HAL_HANDLE_CACHE_LOADS(cache, s1, g, b, i, s2);
    uintptr_t inconsistent = (s1 ^ s2) | (s1 & 1) | (g ^ generation);
    hal_handle_answer answer = { b, inconsistent == 0 ? i : UINTPTR_MAX };
    return answer;
}

/// Reads a consistent (bits, info) pair for `generation` into the out-parameters (handles):
/// false, writing nothing, when a writer is active or the cached generation is not `generation`.
static inline bool hal_handle_cache_read(const hal_handle_cache *cache, uintptr_t generation, uint64_t *bits, uintptr_t *info) {
    HAL_HANDLE_CACHE_LOADS(cache, s1, g, b, i, s2);
    if (__builtin_expect(s1 != s2 || (s1 & 1) != 0 || g != generation, 0)) return false;
    *bits = b;
    *info = i;
    return true;
}

// MARK: - Keyed-read table (KeyedReadCache.swift)

/// One slot of a client's keyed-read table: a key's two `String` words and the requested type
/// (written once, before the tag is released) and the answer for them, a handle cache whose
/// `owner` field is the slot's tag: 0 free, 1 being written, else the type code. 64 bytes on
/// every target (padded where pointers are 32 bits), so an aligned table puts each slot, key
/// and answer, in one cache line. 32-bit targets compile the slot but never use the table
/// (`StringLayout.available` is false there).
typedef struct {
    hal_handle_cache answer;
    uint64_t w0;
    uint64_t w1;
#if UINTPTR_MAX != UINT64_MAX
    char padding[64 - sizeof(hal_handle_cache) - 2 * sizeof(uint64_t)];
#endif
} hal_keyed_slot;

/// The slot's tag (acquire: a ready tag's words are visible).
static inline uintptr_t hal_keyed_slot_tag(const hal_keyed_slot *slot) {
    return (uintptr_t)__atomic_load_n(&slot->answer.owner, __ATOMIC_ACQUIRE);
}

/// Claims a free slot (tag 0 -> 1). On failure `seen` receives the tag found.
static inline bool hal_keyed_slot_claim(hal_keyed_slot *slot, uintptr_t *seen) {
    const void *expected = 0;
    bool claimed = __atomic_compare_exchange_n(
        &slot->answer.owner, &expected, (const void *)1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    *seen = (uintptr_t)expected;
    return claimed;
}

/// Writes a claimed slot's words, then releases its tag `code`.
static inline void hal_keyed_slot_publish(hal_keyed_slot *slot, uint64_t w0, uint64_t w1, uintptr_t code) {
    slot->w0 = w0;
    slot->w1 = w1;
    __atomic_store_n(&slot->answer.owner, (const void *)code, __ATOMIC_RELEASE);
}

/// Publishes a new resolution. When another writer holds the seqlock this returns without
/// writing (the caller already has its answer; the next read retries the cache).
///
/// The compare-and-swap that takes the lock is acquire on success (C11: the data stores that
/// follow may not move above it), then a release fence orders the odd `seq` before the data for
/// readers; the closing store of the even `seq` is a release.
static inline void hal_handle_cache_write(hal_handle_cache *cache, uintptr_t generation, uint64_t bits, uintptr_t info) {
    uintptr_t s = __atomic_load_n(&cache->seq, __ATOMIC_RELAXED);
    if ((s & 1) != 0) return;
    if (!__atomic_compare_exchange_n(&cache->seq, &s, s + 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&cache->generation, generation, __ATOMIC_RELAXED);
    __atomic_store_n(&cache->bits, bits, __ATOMIC_RELAXED);
    __atomic_store_n(&cache->info, info, __ATOMIC_RELAXED);
    __atomic_store_n(&cache->seq, s + 2, __ATOMIC_RELEASE);
}

static inline uint64_t hal_handle_exposed_until(const hal_handle_cache *cache) {
    return __atomic_load_n(&cache->exposed_until.value, __ATOMIC_RELAXED);
}
static inline void hal_handle_set_exposed_until(hal_handle_cache *cache, uint64_t value) {
    __atomic_store_n(&cache->exposed_until.value, value, __ATOMIC_RELAXED);
}

/// Whether the `count` bytes at `p` lie in a read-only segment of a loaded image (the binary's or
/// a library's code and constant data: `dl_iterate_phdr` on Linux and Android, the dyld images'
/// segments mapped without write permission on Apple platforms; false elsewhere). The ranges are
/// collected once and again on a miss at most every 100 ms, under a lock: call it when a key first
/// enters a table, never per read (`StringLayout.isLiteralInImage`).
bool hal_image_readonly_contains(const void *p, size_t count);

/// How many times the ranges were collected (tests: a miss re-collects at most every 100 ms).
uint64_t hal_image_range_collections(void);

/// The usable size of the heap block at `p` (from malloc), or 0 where the platform cannot tell:
/// the memo's check of the dictionary storage layout reads nothing past it.
size_t hal_allocation_size(const void *p);

/// Asks for the `lines` cache lines from `p` to be loaded (a hint: it never faults, whatever the
/// address), so a cold memo entry's lines are fetched at once rather than one dependent miss at
/// a time.
static inline void hal_prefetch_lines(const void *p, long lines) {
    const char *c = (const char *)p;
    for (long i = 0; i < lines; i++) __builtin_prefetch(c + 64 * i, 0, 3);
}

/// Asks for the `lines` cache lines from `p` to be loaded for writing (a hint, as
/// `hal_prefetch_lines`): for an object about to be retained, whose reference count's atomic
/// write would otherwise wait for its line with everything behind it.
static inline void hal_prefetch_lines_for_write(const void *p, long lines) {
    const char *c = (const char *)p;
    for (long i = 0; i < lines; i++) __builtin_prefetch(c + 64 * i, 1, 3);
}

// MARK: - Layout checks

// What the Swift code relies on, checked by every compiler that sees this header: the C
// compiler of each build, the Swift importer, and `scripts/check-c-layouts.sh` (run by
// `.ci/run`), which compiles this header for every declared target (arm64/x86_64 Apple,
// arm64_32 and armv7k watchOS, i686 Linux, aarch64 Android) with the toolchain's clang.
// Swift reaches fields by name through the importer; these pin what it assumes beyond names:
// sizes (a table's stride), where the answer sits in a keyed slot (a slot's address is its
// answer's), the padding that keeps hot words on their own lines, and 64-bit atomics that
// are single instructions on 32-bit targets too.
#define HAL_CHECK(condition, message) _Static_assert(condition, message)
HAL_CHECK(sizeof(hal_atomic_word) == sizeof(uintptr_t), "hal_atomic_word is one machine word");
HAL_CHECK(sizeof(hal_atomic_u64) == 8 && _Alignof(hal_atomic_u64) == 8, "hal_atomic_u64 is 8 aligned bytes");
HAL_CHECK(__atomic_always_lock_free(sizeof(uint64_t), 0), "64-bit atomics are lock-free");
HAL_CHECK(__atomic_always_lock_free(sizeof(uintptr_t), 0), "word atomics are lock-free");
HAL_CHECK(offsetof(hal_store_words, current) == 0, "the snapshot pointer opens its block");
HAL_CHECK(offsetof(hal_store_words, generation) == 128, "the generation has a 128-byte block of its own");
HAL_CHECK(sizeof(hal_store_words) == 256, "two 128-byte blocks");
HAL_CHECK(sizeof(hal_hazard_record) == 128, "a hazard record fills two cache lines");
HAL_CHECK(offsetof(hal_hazard_record, hazard) == 0, "the hazard slot opens its record");
HAL_CHECK(offsetof(hal_handle_cache, seq) == 0, "the seqlock word opens a handle cache");
HAL_CHECK(offsetof(hal_handle_cache, bits) % 8 == 0, "the value bits are 8-aligned (one atomic access)");
HAL_CHECK(offsetof(hal_handle_cache, exposed_until) % 8 == 0, "the exposure mark is 8-aligned");
HAL_CHECK(sizeof(hal_handle_cache) == (UINTPTR_MAX == UINT64_MAX ? 48 : 40), "a handle cache is 48 bytes (40 on 32-bit)");
HAL_CHECK(offsetof(hal_keyed_slot, answer) == 0, "a keyed slot's address is its answer's");
HAL_CHECK(offsetof(hal_keyed_slot, w0) == sizeof(hal_handle_cache), "the key's words follow the answer");
HAL_CHECK(sizeof(hal_keyed_slot) == 64, "a keyed slot is one 64-byte cache line on every target");
#undef HAL_CHECK

#if defined(__cplusplus)
}
#endif

#endif
