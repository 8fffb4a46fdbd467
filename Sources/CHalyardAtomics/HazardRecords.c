// Hazard records for the snapshot store. See docs/architecture.md, "Snapshot store and memory
// reclamation".
#include "CHalyardAtomics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

int hal_hazard_asymmetric = 0;

#if defined(__linux__) && !defined(HAL_NO_INITIAL_EXEC_TLS)
__thread hal_hazard_record *hal_hazard_current __attribute__((tls_model("initial-exec"))) = 0;
#else
__thread hal_hazard_record *hal_hazard_current = 0;
#endif

// Records are never freed: a record is reused by the next thread once its owner exits, so the
// list is bounded by the largest number of threads that ever read at the same time.
static hal_hazard_record *hal_hazard_head = 0;
static pthread_once_t hal_hazard_once = PTHREAD_ONCE_INIT;
static pthread_key_t hal_hazard_key;

static void hal_hazard_thread_exit(void *value) {
    hal_hazard_record *record = (hal_hazard_record *)value;
    __atomic_store_n(&record->hazard, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&record->in_use, 0, __ATOMIC_RELEASE);
    hal_hazard_current = 0;
}

static void hal_hazard_initialize_once(void) {
    pthread_key_create(&hal_hazard_key, hal_hazard_thread_exit);
    // Read once, before any store exists: the mode never changes while readers run.
    const char *mode = getenv("HALYARD_FENCE");
    if (mode != 0 && strcmp(mode, "symmetric") == 0) return;
#if defined(__linux__) && !defined(HAL_FORCE_SYMMETRIC_FENCES)
    // Register for expedited private membarrier; only when that succeeds may readers drop
    // their full fence. ThreadSanitizer does not model membarrier, but it does not model store
    // buffering either, so the asymmetric scheme is checked by TSan exactly like the symmetric one.
    long registered = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
    if (registered == 0) {
        __atomic_store_n(&hal_hazard_asymmetric, 1, __ATOMIC_SEQ_CST);
    }
#endif
}

void hal_hazard_initialize(void) {
    pthread_once(&hal_hazard_once, hal_hazard_initialize_once);
}

hal_hazard_record *hal_hazard_record_slow(void) {
    hal_hazard_initialize();
    hal_hazard_record *record = __atomic_load_n(&hal_hazard_head, __ATOMIC_ACQUIRE);
    for (; record != 0; record = record->next) {
        uintptr_t expected = 0;
        if (__atomic_load_n(&record->in_use, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&record->in_use, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            break;
        }
    }
    if (record == 0) {
        void *memory = 0;
        if (posix_memalign(&memory, 128, sizeof(hal_hazard_record)) != 0 || memory == 0) abort();
        record = (hal_hazard_record *)memory;
        memset(record, 0, sizeof(*record));
        record->in_use = 1;
        hal_hazard_record *head = __atomic_load_n(&hal_hazard_head, __ATOMIC_ACQUIRE);
        do {
            record->next = head;
        } while (!__atomic_compare_exchange_n(&hal_hazard_head, &head, record, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    }
    hal_hazard_current = record;
    pthread_setspecific(hal_hazard_key, record);
    return record;
}

int hal_hazard_fence_mode(void) {
    hal_hazard_initialize();
    return __atomic_load_n(&hal_hazard_asymmetric, __ATOMIC_RELAXED);
}

hal_store_words *hal_store_words_allocate(void) {
    void *memory = 0;
    if (posix_memalign(&memory, 128, sizeof(hal_store_words)) != 0 || memory == 0) abort();
    memset(memory, 0, sizeof(hal_store_words));
    return (hal_store_words *)memory;
}

void hal_store_words_free(hal_store_words *words) { free(words); }

bool hal_hazard_heavy_fence(void) {
#if defined(__linux__)
    if (__atomic_load_n(&hal_hazard_asymmetric, __ATOMIC_RELAXED)) {
        // Registration succeeded, so this should not fail; if it ever does, reclamation waits
        // for a later round rather than proceeding on a weaker guarantee.
        return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
    }
#endif
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return true;
}

intptr_t hal_hazard_collect(uintptr_t *out, intptr_t capacity) {
    intptr_t count = 0;
    for (hal_hazard_record *record = __atomic_load_n(&hal_hazard_head, __ATOMIC_ACQUIRE); record != 0;
         record = record->next) {
        uintptr_t pointer = __atomic_load_n(&record->hazard, __ATOMIC_ACQUIRE);
        if (pointer == 0) continue;
        if (count < capacity) out[count] = pointer;
        count += 1;
    }
    return count;
}

intptr_t hal_hazard_record_count(void) {
    intptr_t count = 0;
    for (hal_hazard_record *record = __atomic_load_n(&hal_hazard_head, __ATOMIC_ACQUIRE); record != 0;
         record = record->next) {
        count += 1;
    }
    return count;
}

#if defined(__linux__)
#include <malloc.h>
size_t hal_allocation_size(const void *p) { return malloc_usable_size((void *)p); }
#else
size_t hal_allocation_size(const void *p) { (void)p; return 0; }
#endif
