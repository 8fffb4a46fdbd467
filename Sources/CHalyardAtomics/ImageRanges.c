// Where a loaded image's read-only segments lie, for Halyard's layout reads (docs/architecture.md,
// "Layout reads"): a string whose words say "literal" is taken as one only when its bytes lie in
// one of these ranges (the constant data of the binary or of a library), so an immortal string
// over memory that can change or be freed reads as a heap key.
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include "CHalyardAtomics.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#if defined(__linux__) || defined(__ANDROID__)
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#endif

typedef struct {
    uintptr_t start;
    uintptr_t end;
} hal_range;

// The ranges last collected, under the lock: the check runs when a key first enters a table (a
// keyed-read slot, a literal side-table slot), never on a read.
static pthread_mutex_t hal_ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static hal_range *hal_ranges = 0;
static size_t hal_ranges_count = 0;
static size_t hal_ranges_capacity = 0;
static uint64_t hal_ranges_collected_at = 0;
static int hal_ranges_collected = 0;
static uint64_t hal_ranges_collections = 0;
/// Whether this collection has already read the main program's sections (it comes first, with
/// an empty name; later nameless entries, such as the vDSO, have no file).
static int hal_ranges_count_main = 0;

/// A miss collects the ranges again at most this often (nanoseconds): an image loaded since the
/// last collection has its literals read as heap keys (by their bytes: the same answers, more
/// slowly) until then, and a string that is no literal costs no walk of the images per read.
static const uint64_t hal_ranges_refresh_interval = 100000000;

static uint64_t hal_monotonic_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void hal_ranges_add(uintptr_t start, uintptr_t size) {
    if (size == 0 || start + size < start) return;
    if (hal_ranges_count == hal_ranges_capacity) {
        size_t capacity = hal_ranges_capacity == 0 ? 64 : hal_ranges_capacity * 2;
        hal_range *grown = (hal_range *)realloc(hal_ranges, capacity * sizeof(hal_range));
        if (grown == 0) return;   // out of memory: fewer ranges, so fewer literals (never a wrong one)
        hal_ranges = grown;
        hal_ranges_capacity = capacity;
    }
    hal_ranges[hal_ranges_count].start = start;
    hal_ranges[hal_ranges_count].end = start + size;
    hal_ranges_count += 1;
}

#if defined(__linux__) || defined(__ANDROID__)
static int hal_read_at(int fd, void *buffer, size_t count, off_t offset) {
    size_t done = 0;
    while (done < count) {
        ssize_t n = pread(fd, (char *)buffer + done, count - done, offset + (off_t)done);
        if (n <= 0) return 0;
        done += (size_t)n;
    }
    return 1;
}

/// Whether the file's program headers are the mapped image's, byte for byte.
static int hal_same_program_headers(int fd, const ElfW(Ehdr) *header, const struct dl_phdr_info *info) {
    size_t bytes = (size_t)header->e_phnum * sizeof(ElfW(Phdr));
    ElfW(Phdr) *headers = (ElfW(Phdr) *)malloc(bytes);
    int same = headers != 0 && hal_read_at(fd, headers, bytes, (off_t)header->e_phoff)
        && memcmp(headers, info->dlpi_phdr, bytes) == 0;
    free(headers);
    return same;
}

/// Adds the image's `.rodata` sections (constant data, whatever the segment they were linked
/// into: Swift's Linux toolchain links `.rodata` into the writable segment, `readelf -lW` shows
/// it), read from the image's file on disk: its section headers are not mapped. An image whose
/// file cannot be read, or whose program headers are not the mapped image's (a library replaced
/// on disk since it was loaded), adds nothing here.
static void hal_ranges_add_rodata(const char *path, const struct dl_phdr_info *info) {
    uintptr_t base = (uintptr_t)info->dlpi_addr;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ElfW(Ehdr) header;
    if (hal_read_at(fd, &header, sizeof header, 0) && memcmp(header.e_ident, ELFMAG, SELFMAG) == 0
        && header.e_shentsize == sizeof(ElfW(Shdr)) && header.e_shnum > 0 && header.e_shnum < 65280
        && header.e_shstrndx < header.e_shnum && header.e_phentsize == sizeof(ElfW(Phdr))
        && header.e_phnum == info->dlpi_phnum && hal_same_program_headers(fd, &header, info)) {
        size_t bytes = (size_t)header.e_shnum * sizeof(ElfW(Shdr));
        ElfW(Shdr) *sections = (ElfW(Shdr) *)malloc(bytes);
        if (sections != 0 && hal_read_at(fd, sections, bytes, (off_t)header.e_shoff)) {
            const ElfW(Shdr) *names = &sections[header.e_shstrndx];
            char *strings = names->sh_size > 0 && names->sh_size < (1u << 24) ? (char *)malloc(names->sh_size + 1) : 0;
            if (strings != 0 && hal_read_at(fd, strings, names->sh_size, (off_t)names->sh_offset)) {
                strings[names->sh_size] = 0;
                for (unsigned i = 0; i < header.e_shnum; i++) {
                    const ElfW(Shdr) *section = &sections[i];
                    if (section->sh_type != SHT_PROGBITS || (section->sh_flags & SHF_ALLOC) == 0
                        || section->sh_name >= names->sh_size) {
                        continue;
                    }
                    const char *name = strings + section->sh_name;
                    if (strcmp(name, ".rodata") == 0 || strncmp(name, ".rodata.", 8) == 0) {
                        hal_ranges_add(base + (uintptr_t)section->sh_addr, (uintptr_t)section->sh_size);
                    }
                }
            }
            free(strings);
        }
        free(sections);
    }
    close(fd);
}

static int hal_ranges_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    (void)context;
    int writableLoad = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD) continue;
        // A loadable segment the process cannot write: code and constant data.
        if ((header->p_flags & PF_W) == 0) {
            hal_ranges_add((uintptr_t)(info->dlpi_addr + header->p_vaddr), (uintptr_t)header->p_memsz);
        } else {
            writableLoad = 1;
        }
    }
    // Constant data linked into a writable segment: found by its sections. The main program's
    // name is empty: its file is /proc/self/exe. The vDSO has no file.
    if (writableLoad) {
        const char *path = info->dlpi_name != 0 && info->dlpi_name[0] != 0 ? info->dlpi_name : 0;
        if (path == 0 && hal_ranges_count_main == 0) path = "/proc/self/exe";
        if (path != 0 && path[0] == '/') hal_ranges_add_rodata(path, info);
        if (info->dlpi_name == 0 || info->dlpi_name[0] == 0) hal_ranges_count_main = 1;
    }
    return 0;
}
#endif

static void hal_ranges_collect(void) {
    hal_ranges_count = 0;
    hal_ranges_count_main = 0;
#if defined(__linux__) || defined(__ANDROID__)
    dl_iterate_phdr(hal_ranges_visit, 0);
#elif defined(__APPLE__) && defined(__LP64__)
    uint32_t images = _dyld_image_count();
    for (uint32_t i = 0; i < images; i++) {
        const struct mach_header_64 *header = (const struct mach_header_64 *)_dyld_get_image_header(i);
        if (header == 0 || header->magic != MH_MAGIC_64) continue;
        uintptr_t slide = (uintptr_t)_dyld_get_image_vmaddr_slide(i);
        const uint8_t *command = (const uint8_t *)(header + 1);
        for (uint32_t c = 0; c < header->ncmds; c++) {
            const struct load_command *load = (const struct load_command *)command;
            if (load->cmd == LC_SEGMENT_64) {
                const struct segment_command_64 *segment = (const struct segment_command_64 *)command;
                // __TEXT (code and C strings, where Swift puts string literals' bytes): mapped
                // without write permission.
                if ((segment->initprot & VM_PROT_WRITE) == 0 && (segment->initprot & VM_PROT_READ) != 0) {
                    hal_ranges_add((uintptr_t)segment->vmaddr + slide, (uintptr_t)segment->vmsize);
                }
            }
            command += load->cmdsize;
        }
    }
#endif
    hal_ranges_collected_at = hal_monotonic_nanoseconds();
    hal_ranges_collected = 1;
    hal_ranges_collections += 1;
}

static int hal_ranges_find(uintptr_t start, uintptr_t end) {
    for (size_t i = 0; i < hal_ranges_count; i++) {
        if (start >= hal_ranges[i].start && end <= hal_ranges[i].end) return 1;
    }
    return 0;
}

bool hal_image_readonly_contains(const void *p, size_t count) {
    uintptr_t start = (uintptr_t)p;
    uintptr_t end = start + (uintptr_t)count;
    if (p == 0 || end < start) return false;
    pthread_mutex_lock(&hal_ranges_lock);
    if (!hal_ranges_collected) hal_ranges_collect();
    int found = hal_ranges_find(start, end);
    if (!found && hal_monotonic_nanoseconds() - hal_ranges_collected_at >= hal_ranges_refresh_interval) {
        hal_ranges_collect();
        found = hal_ranges_find(start, end);
    }
    pthread_mutex_unlock(&hal_ranges_lock);
    return found != 0;
}

uint64_t hal_image_range_collections(void) {
    pthread_mutex_lock(&hal_ranges_lock);
    uint64_t collections = hal_ranges_collections;
    pthread_mutex_unlock(&hal_ranges_lock);
    return collections;
}
