// libcurl loaded at run time (dlopen), without libcurl's headers: Halyard's Linux transport.
//
// `hal_curl_open` loads the library and resolves every function Halyard uses once, into a table
// the other functions take as their first argument. The variadic entry points (curl_easy_setopt,
// curl_easy_getinfo, curl_multi_setopt) are called here, through variadic function-pointer types,
// and exported as one non-variadic function per argument type, which Swift can call.
//
// Types are spelled with C's own types: a CURL* or CURLM* is a `void *`, a CURLcode, CURLMcode,
// CURLoption, CURLMoption or CURLINFO is an `int`, curl_off_t is `int64_t`. The option and info
// numbers are ABI-stable; the Swift side declares the ones it uses (CurlABI.swift).
#ifndef CHALYARD_CURL_H
#define CHALYARD_CURL_H

#include <stddef.h>
#include <stdint.h>

/// A loaded libcurl and its resolved functions (opaque).
typedef struct hal_curl hal_curl;

/// CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION: `size * count` bytes at `data`.
typedef size_t (*hal_curl_data_callback)(char *data, size_t size, size_t count, void *context);
/// CURLOPT_XFERINFOFUNCTION: transfer progress; a non-zero result aborts the transfer.
typedef int (*hal_curl_xferinfo_callback)(void *context, int64_t download_total, int64_t download_now,
                                          int64_t upload_total, int64_t upload_now);

/// Loads `library` (e.g. "libcurl.so.4") with dlopen and resolves every function; NULL on failure,
/// with the reason written to `error` (NUL-terminated, at most `error_size` bytes). The table lives
/// until `hal_curl_close`.
hal_curl *hal_curl_open(const char *library, char *error, size_t error_size);
/// Unloads a table from `hal_curl_open` (dlclose); nothing of it may be used afterwards.
void hal_curl_close(hal_curl *curl);

// curl_version_info(CURLVERSION_FIRST): the fields every libcurl has.
/// The library's version string ("7.88.1").
const char *hal_curl_version_string(const hal_curl *curl);
/// The library's version number, 0xXXYYZZ.
unsigned int hal_curl_version_num(const hal_curl *curl);
/// The library's feature bits (CURL_VERSION_SSL = 1 << 2, ...).
int hal_curl_version_features(const hal_curl *curl);

/// curl_global_init(flags).
int hal_curl_global_init(const hal_curl *curl, long flags);

/// curl_easy_init.
void *hal_curl_easy_init(const hal_curl *curl);
/// curl_easy_cleanup.
void hal_curl_easy_cleanup(const hal_curl *curl, void *easy);
/// curl_easy_setopt with a `long` argument.
int hal_curl_easy_setopt_long(const hal_curl *curl, void *easy, int option, long value);
/// curl_easy_setopt with a pointer argument (strings, objects, lists, callback data).
int hal_curl_easy_setopt_ptr(const hal_curl *curl, void *easy, int option, const void *value);
/// curl_easy_setopt with a curl_off_t argument.
int hal_curl_easy_setopt_off_t(const hal_curl *curl, void *easy, int option, int64_t value);
/// curl_easy_setopt with a write/header callback.
int hal_curl_easy_setopt_data_callback(const hal_curl *curl, void *easy, int option, hal_curl_data_callback value);
/// curl_easy_setopt with a progress (xferinfo) callback.
int hal_curl_easy_setopt_xferinfo_callback(const hal_curl *curl, void *easy, int option,
                                           hal_curl_xferinfo_callback value);
/// curl_easy_getinfo into a `long`.
int hal_curl_easy_getinfo_long(const hal_curl *curl, void *easy, int info, long *value);
/// curl_easy_getinfo into a pointer (CURLINFO_STRING / CURLINFO_PTR infos).
int hal_curl_easy_getinfo_ptr(const hal_curl *curl, void *easy, int info, void **value);
/// curl_easy_getinfo into a curl_off_t.
int hal_curl_easy_getinfo_off_t(const hal_curl *curl, void *easy, int info, int64_t *value);
/// curl_easy_pause.
int hal_curl_easy_pause(const hal_curl *curl, void *easy, int bitmask);
/// curl_easy_strerror.
const char *hal_curl_easy_strerror(const hal_curl *curl, int code);

/// curl_slist_append (a copy of `line` is appended); NULL when out of memory.
void *hal_curl_slist_append(const hal_curl *curl, void *list, const char *line);
/// curl_slist_free_all.
void hal_curl_slist_free_all(const hal_curl *curl, void *list);

/// curl_multi_init.
void *hal_curl_multi_init(const hal_curl *curl);
/// curl_multi_cleanup.
int hal_curl_multi_cleanup(const hal_curl *curl, void *multi);
/// curl_multi_setopt with a `long` argument.
int hal_curl_multi_setopt_long(const hal_curl *curl, void *multi, int option, long value);
/// curl_multi_setopt with a pointer argument.
int hal_curl_multi_setopt_ptr(const hal_curl *curl, void *multi, int option, const void *value);
/// curl_multi_add_handle.
int hal_curl_multi_add_handle(const hal_curl *curl, void *multi, void *easy);
/// curl_multi_remove_handle.
int hal_curl_multi_remove_handle(const hal_curl *curl, void *multi, void *easy);
/// curl_multi_perform.
int hal_curl_multi_perform(const hal_curl *curl, void *multi, int *running);
/// curl_multi_poll with no extra descriptors.
int hal_curl_multi_poll(const hal_curl *curl, void *multi, int timeout_ms, int *descriptors);
/// curl_multi_wakeup.
int hal_curl_multi_wakeup(const hal_curl *curl, void *multi);
/// curl_multi_timeout.
int hal_curl_multi_timeout(const hal_curl *curl, void *multi, long *milliseconds);
/// curl_multi_strerror.
const char *hal_curl_multi_strerror(const hal_curl *curl, int code);
/// curl_multi_info_read, keeping only CURLMSG_DONE messages: 1 with the finished handle and its
/// CURLcode in `easy` and `result`, 0 when no finished transfer is left.
int hal_curl_multi_info_read_done(const hal_curl *curl, void *multi, void **easy, int *result);

#endif
