/* Shared helpers of the C ABI tests (tests/c_abi.rs compiles and runs them).
 * Every test program gets a fresh scratch directory as argv[1]. */
#ifndef DSH_TEST_COMMON_H
#define DSH_TEST_COMMON_H

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsh_persist.h"

/* Invalid UTF-8 (a lone continuation byte and 0xFF). */
#define BAD_UTF8 "\x80\xff{}"

/* Fails the program with the status and the last error. */
#define CHECK(call)                                                                        \
    do {                                                                                   \
        dsh_status check_status_ = (call);                                                 \
        if (check_status_ != DSH_OK) {                                                     \
            fprintf(stderr, "%s:%d: %s -> status %d: %s [code: %s]\n", __FILE__, __LINE__, \
                    #call, (int)check_status_, dsh_last_error(), dsh_last_error_code());   \
            exit(1);                                                                       \
        }                                                                                  \
        if (dsh_last_error()[0] != '\0') {                                                 \
            fprintf(stderr, "%s:%d: %s succeeded but left a last error: %s\n", __FILE__,   \
                    __LINE__, #call, dsh_last_error());                                    \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* Expects a status, and a last error containing `needle`. */
#define EXPECT_STATUS(call, want, needle)                                                    \
    do {                                                                                     \
        dsh_status expect_status_ = (call);                                                  \
        if (expect_status_ != (want)) {                                                      \
            fprintf(stderr, "%s:%d: %s -> status %d, want %d (%s): %s\n", __FILE__, __LINE__, \
                    #call, (int)expect_status_, (int)(want), #want, dsh_last_error());       \
            exit(1);                                                                         \
        }                                                                                    \
        if (strstr(dsh_last_error(), (needle)) == NULL) {                                    \
            fprintf(stderr, "%s:%d: %s: last error \"%s\" lacks \"%s\"\n", __FILE__,         \
                    __LINE__, #call, dsh_last_error(), (needle));                            \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, dsh_last_error());                                          \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* Expects `text` to contain `needle`, then frees `text` with dsh_free. */
static inline void expect_contains_and_free(char *text, const char *needle, int line) {
    if (text == NULL || strstr(text, needle) == NULL) {
        fprintf(stderr, "line %d: result \"%s\" lacks \"%s\"\n", line, text ? text : "(NULL)",
                needle);
        exit(1);
    }
    dsh_free(text);
}
#define EXPECT_RESULT(text, needle) expect_contains_and_free((text), (needle), __LINE__)

/* Counts occurrences of `needle` in `text`. */
static inline int count(const char *text, const char *needle) {
    int n = 0;
    size_t len = strlen(needle);
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + len, needle)) {
        n++;
    }
    return n;
}

/* A JSONL store config (raw, 5 ms write window) rooted at `dir`/`name`. */
static inline void jsonl_config(char *buf, size_t size, const char *dir, const char *name,
                         const char *compression) {
    snprintf(buf, size,
             "{\"backend\":\"jsonl\",\"root\":\"%s/%s\",\"compression\":\"%s\","
             "\"writeBatchMaxDelayMs\":5}",
             dir, name, compression);
}

static inline dsh_store *open_jsonl(const char *dir, const char *name) {
    char config[4096];
    dsh_store *store = NULL;
    jsonl_config(config, sizeof config, dir, name, "none");
    CHECK(dsh_store_open(config, &store));
    EXPECT(store != NULL);
    return store;
}

#define MODEL_SOURCE "{\"kind\":\"model\",\"provider\":\"deepseek-official\",\"model\":\"deepseek-v4-flash\"}"

/* The six events of one complete turn, appended through a live session. */
static inline void append_turn(dsh_session *session, int turn) {
    char data[1024];
    uint64_t seq = 0;
    snprintf(data, sizeof data, "{\"turn\":%d}", turn);
    CHECK(dsh_session_append(session, "turn/start", data, NULL, &seq));
    snprintf(data, sizeof data,
             "{\"id\":\"u%d\",\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
             "\"question %d\"}],\"source\":{\"kind\":\"user\"}}",
             turn, turn);
    CHECK(dsh_session_append(session, "user/message", data, "{\"surfaceOp\":\"append\"}", &seq));
    snprintf(data, sizeof data, "{\"turn\":%d,\"step\":1}", turn);
    CHECK(dsh_session_append(session, "step/start", data, NULL, &seq));
    snprintf(data, sizeof data,
             "{\"turn\":%d,\"step\":1,\"message\":{\"id\":\"a%d\",\"role\":\"assistant\","
             "\"content\":[{\"type\":\"text\",\"text\":\"answer %d\"}],\"source\":" MODEL_SOURCE
             "}}",
             turn, turn, turn);
    CHECK(dsh_session_append(session, "assistant/message", data, "{\"surfaceOp\":\"append\"}",
                             &seq));
    snprintf(data, sizeof data, "{\"turn\":%d,\"step\":1}", turn);
    CHECK(dsh_session_append(session, "step/end", data, NULL, &seq));
    snprintf(data, sizeof data, "{\"turn\":%d,\"reason\":{\"kind\":\"completed\"}}", turn);
    CHECK(dsh_session_append(session, "turn/end", data, NULL, &seq));
}

/* One complete turn as a JSON array of complete events (dsh_store_append),
 * seqs first_seq..first_seq+5. */
static inline void turn_array(char *buf, size_t size, int turn, int first_seq) {
    const int s = first_seq;
    snprintf(buf, size,
             "[{\"type\":\"turn/start\",\"seq\":%d,\"time\":1700000000000,\"data\":{\"turn\":%d}},"
             "{\"type\":\"user/message\",\"seq\":%d,\"time\":1700000000001,\"data\":{\"id\":"
             "\"u%d\",\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"q\"}],"
             "\"source\":{\"kind\":\"user\"}},\"surfaceOp\":\"append\"},"
             "{\"type\":\"step/start\",\"seq\":%d,\"time\":1700000000002,\"data\":{\"turn\":%d,"
             "\"step\":1}},"
             "{\"type\":\"assistant/message\",\"seq\":%d,\"time\":1700000000003,\"data\":{"
             "\"turn\":%d,\"step\":1,\"message\":{\"id\":\"a%d\",\"role\":\"assistant\","
             "\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"source\":" MODEL_SOURCE
             "}},\"surfaceOp\":\"append\"},"
             "{\"type\":\"step/end\",\"seq\":%d,\"time\":1700000000004,\"data\":{\"turn\":%d,"
             "\"step\":1}},"
             "{\"type\":\"turn/end\",\"seq\":%d,\"time\":1700000000005,\"data\":{\"turn\":%d,"
             "\"reason\":{\"kind\":\"completed\"}}}]",
             s, turn, s + 1, turn, s + 2, turn, s + 3, turn, turn, s + 4, turn, s + 5, turn);
}

#endif /* DSH_TEST_COMMON_H */
