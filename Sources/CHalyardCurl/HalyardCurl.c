// See include/CHalyardCurl.h. Only libc (dlopen is in glibc itself since 2.34; -ldl is linked
// for older ones); no libcurl header.
#include "CHalyardCurl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

// The C types libcurl's functions have, spelled without its headers. Enums are `int`.
typedef int (*hal_setopt_fn)(void *, int, ...);
typedef int (*hal_getinfo_fn)(void *, int, ...);

// The leading fields of curl_version_info_data, as CURLVERSION_FIRST defines them.
struct hal_curl_version_prefix {
    int age;
    const char *version;
    unsigned int version_num;
    const char *host;
    int features;
};

// CURLMsg: { CURLMSG msg; CURL *easy_handle; union { void *whatever; CURLcode result; } data; }.
struct hal_curl_message {
    int msg;
    void *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
};

enum { HAL_CURLMSG_DONE = 1, HAL_CURLVERSION_FIRST = 0 };

struct hal_curl {
    void *library;
    const struct hal_curl_version_prefix *(*version_info)(int);
    int (*global_init)(long);
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
    hal_setopt_fn easy_setopt;
    hal_getinfo_fn easy_getinfo;
    int (*easy_pause)(void *, int);
    const char *(*easy_strerror)(int);
    void *(*slist_append)(void *, const char *);
    void (*slist_free_all)(void *);
    void *(*multi_init)(void);
    int (*multi_cleanup)(void *);
    hal_setopt_fn multi_setopt;
    int (*multi_add_handle)(void *, void *);
    int (*multi_remove_handle)(void *, void *);
    int (*multi_perform)(void *, int *);
    int (*multi_poll)(void *, void *, unsigned int, int, int *);
    int (*multi_wakeup)(void *);
    int (*multi_timeout)(void *, long *);
    const char *(*multi_strerror)(int);
    struct hal_curl_message *(*multi_info_read)(void *, int *);
};

static int resolve(void *library, const char *name, void **slot, char *error, size_t error_size) {
    *slot = dlsym(library, name);
    if (*slot == NULL) {
        snprintf(error, error_size, "%s has no %s", "libcurl", name);
        return 0;
    }
    return 1;
}

hal_curl *hal_curl_open(const char *library_name, char *error, size_t error_size) {
    if (error_size > 0) error[0] = 0;
    void *library = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s", why != NULL ? why : "dlopen failed");
        return NULL;
    }
    hal_curl *curl = calloc(1, sizeof(hal_curl));
    if (curl == NULL) {
        snprintf(error, error_size, "out of memory");
        dlclose(library);
        return NULL;
    }
    curl->library = library;
#define HAL_RESOLVE(field, name)                                                        \
    if (!resolve(library, name, (void **)&curl->field, error, error_size)) goto failed;
    HAL_RESOLVE(version_info, "curl_version_info")
    HAL_RESOLVE(global_init, "curl_global_init")
    HAL_RESOLVE(easy_init, "curl_easy_init")
    HAL_RESOLVE(easy_cleanup, "curl_easy_cleanup")
    HAL_RESOLVE(easy_setopt, "curl_easy_setopt")
    HAL_RESOLVE(easy_getinfo, "curl_easy_getinfo")
    HAL_RESOLVE(easy_pause, "curl_easy_pause")
    HAL_RESOLVE(easy_strerror, "curl_easy_strerror")
    HAL_RESOLVE(slist_append, "curl_slist_append")
    HAL_RESOLVE(slist_free_all, "curl_slist_free_all")
    HAL_RESOLVE(multi_init, "curl_multi_init")
    HAL_RESOLVE(multi_cleanup, "curl_multi_cleanup")
    HAL_RESOLVE(multi_setopt, "curl_multi_setopt")
    HAL_RESOLVE(multi_add_handle, "curl_multi_add_handle")
    HAL_RESOLVE(multi_remove_handle, "curl_multi_remove_handle")
    HAL_RESOLVE(multi_perform, "curl_multi_perform")
    HAL_RESOLVE(multi_poll, "curl_multi_poll")
    HAL_RESOLVE(multi_wakeup, "curl_multi_wakeup")
    HAL_RESOLVE(multi_timeout, "curl_multi_timeout")
    HAL_RESOLVE(multi_strerror, "curl_multi_strerror")
    HAL_RESOLVE(multi_info_read, "curl_multi_info_read")
#undef HAL_RESOLVE
    if (curl->version_info(HAL_CURLVERSION_FIRST) == NULL) {
        snprintf(error, error_size, "curl_version_info returned nothing");
        goto failed;
    }
    return curl;
failed:
    dlclose(library);
    free(curl);
    return NULL;
}

void hal_curl_close(hal_curl *curl) {
    if (curl == NULL) return;
    dlclose(curl->library);
    free(curl);
}

const char *hal_curl_version_string(const hal_curl *curl) { return curl->version_info(HAL_CURLVERSION_FIRST)->version; }
unsigned int hal_curl_version_num(const hal_curl *curl) { return curl->version_info(HAL_CURLVERSION_FIRST)->version_num; }
int hal_curl_version_features(const hal_curl *curl) { return curl->version_info(HAL_CURLVERSION_FIRST)->features; }

int hal_curl_global_init(const hal_curl *curl, long flags) { return curl->global_init(flags); }

void *hal_curl_easy_init(const hal_curl *curl) { return curl->easy_init(); }
void hal_curl_easy_cleanup(const hal_curl *curl, void *easy) { curl->easy_cleanup(easy); }

int hal_curl_easy_setopt_long(const hal_curl *curl, void *easy, int option, long value) {
    return curl->easy_setopt(easy, option, value);
}
int hal_curl_easy_setopt_ptr(const hal_curl *curl, void *easy, int option, const void *value) {
    return curl->easy_setopt(easy, option, value);
}
int hal_curl_easy_setopt_off_t(const hal_curl *curl, void *easy, int option, int64_t value) {
    return curl->easy_setopt(easy, option, value);
}
int hal_curl_easy_setopt_data_callback(const hal_curl *curl, void *easy, int option, hal_curl_data_callback value) {
    return curl->easy_setopt(easy, option, value);
}
int hal_curl_easy_setopt_xferinfo_callback(const hal_curl *curl, void *easy, int option,
                                           hal_curl_xferinfo_callback value) {
    return curl->easy_setopt(easy, option, value);
}
int hal_curl_easy_getinfo_long(const hal_curl *curl, void *easy, int info, long *value) {
    return curl->easy_getinfo(easy, info, value);
}
int hal_curl_easy_getinfo_ptr(const hal_curl *curl, void *easy, int info, void **value) {
    return curl->easy_getinfo(easy, info, value);
}
int hal_curl_easy_getinfo_off_t(const hal_curl *curl, void *easy, int info, int64_t *value) {
    return curl->easy_getinfo(easy, info, value);
}
int hal_curl_easy_pause(const hal_curl *curl, void *easy, int bitmask) { return curl->easy_pause(easy, bitmask); }
const char *hal_curl_easy_strerror(const hal_curl *curl, int code) { return curl->easy_strerror(code); }

void *hal_curl_slist_append(const hal_curl *curl, void *list, const char *line) {
    return curl->slist_append(list, line);
}
void hal_curl_slist_free_all(const hal_curl *curl, void *list) { curl->slist_free_all(list); }

void *hal_curl_multi_init(const hal_curl *curl) { return curl->multi_init(); }
int hal_curl_multi_cleanup(const hal_curl *curl, void *multi) { return curl->multi_cleanup(multi); }
int hal_curl_multi_setopt_long(const hal_curl *curl, void *multi, int option, long value) {
    return curl->multi_setopt(multi, option, value);
}
int hal_curl_multi_setopt_ptr(const hal_curl *curl, void *multi, int option, const void *value) {
    return curl->multi_setopt(multi, option, value);
}
int hal_curl_multi_add_handle(const hal_curl *curl, void *multi, void *easy) { return curl->multi_add_handle(multi, easy); }
int hal_curl_multi_remove_handle(const hal_curl *curl, void *multi, void *easy) {
    return curl->multi_remove_handle(multi, easy);
}
int hal_curl_multi_perform(const hal_curl *curl, void *multi, int *running) { return curl->multi_perform(multi, running); }
int hal_curl_multi_poll(const hal_curl *curl, void *multi, int timeout_ms, int *descriptors) {
    return curl->multi_poll(multi, NULL, 0, timeout_ms, descriptors);
}
int hal_curl_multi_wakeup(const hal_curl *curl, void *multi) { return curl->multi_wakeup(multi); }
int hal_curl_multi_timeout(const hal_curl *curl, void *multi, long *milliseconds) {
    return curl->multi_timeout(multi, milliseconds);
}
const char *hal_curl_multi_strerror(const hal_curl *curl, int code) { return curl->multi_strerror(code); }

int hal_curl_multi_info_read_done(const hal_curl *curl, void *multi, void **easy, int *result) {
    int left = 0;
    struct hal_curl_message *message;
    while ((message = curl->multi_info_read(multi, &left)) != NULL) {
        if (message->msg != HAL_CURLMSG_DONE) continue;
        *easy = message->easy_handle;
        *result = message->data.result;
        return 1;
    }
    return 0;
}
