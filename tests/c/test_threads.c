/* Several host threads on one store: each runs its own live session while
 * all of them read shared state; per-thread last errors stay separate.
 * argv[1]: scratch dir. */
#include "common.h"

#include <pthread.h>

#define THREADS 6
#define TURNS 4

static dsh_store *store;
static dsh_session *shared_session;

static void *worker(void *arg) {
    int index = *(int *)arg;
    char header[128], id[64], bad_id[64];
    dsh_session *session = NULL;
    char *out = NULL;
    snprintf(id, sizeof id, "thread-%d", index);
    snprintf(header, sizeof header, "{\"id\":\"%s\"}", id);
    CHECK(dsh_session_start(store, header, &session));
    for (int turn = 1; turn <= TURNS; turn++) {
        append_turn(session, turn);
        if (turn % 2 == 0) {
            CHECK(dsh_session_flush(session));
        }
        /* Reads of shared state, concurrently with the other writers. */
        CHECK(dsh_session_events(shared_session, 0, &out));
        dsh_free(out);
        CHECK(dsh_store_list(store, &out));
        dsh_free(out);
        /* A failure on this thread names this thread's id only. */
        snprintf(bad_id, sizeof bad_id, "missing-%d", index);
        EXPECT_STATUS(dsh_store_load(store, bad_id, &out), DSH_NOT_FOUND, bad_id);
    }
    CHECK(dsh_session_events(session, 0, &out));
    EXPECT(count(out, "\"seq\":") == 6 * TURNS);
    dsh_free(out);
    CHECK(dsh_session_close(session));
    CHECK(dsh_store_load(store, id, &out));
    EXPECT(count(out, "\"seq\":") == 6 * TURNS);
    dsh_free(out);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t threads[THREADS];
    int indexes[THREADS];
    char *out = NULL;
    EXPECT(argc >= 2);
    store = open_jsonl(argv[1], "store");
    CHECK(dsh_session_start(store, "{\"id\":\"shared\"}", &shared_session));
    append_turn(shared_session, 1);
    for (int i = 0; i < THREADS; i++) {
        indexes[i] = i;
        EXPECT(pthread_create(&threads[i], NULL, worker, &indexes[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        EXPECT(pthread_join(threads[i], NULL) == 0);
    }
    /* The main thread's last error is its own (still the last success). */
    EXPECT(dsh_last_error()[0] == '\0');
    CHECK(dsh_session_close(shared_session));
    CHECK(dsh_store_list(store, &out));
    EXPECT(count(out, "\"id\":\"thread-") == THREADS);
    dsh_free(out);
    CHECK(dsh_store_close(store));
    puts("test_threads: ok");
    return 0;
}
