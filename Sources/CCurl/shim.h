// libcurl for Halyard's Linux transport (Debian: libcurl4-openssl-dev).
//
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic C functions, which
// Swift cannot call: these typed inline wrappers give Swift one entry point per argument type.
#include <curl/curl.h>

typedef size_t (*halyard_curl_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode halyard_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }

static inline CURLcode halyard_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode halyard_curl_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode halyard_curl_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode halyard_curl_easy_setopt_callback(CURL *easy, CURLoption option,
                                                         halyard_curl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

static inline CURLcode halyard_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLMcode halyard_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

// The result of a finished transfer (CURLMsg keeps it in a union).
static inline CURLcode halyard_curl_msg_result(const CURLMsg *message) { return message->data.result; }
