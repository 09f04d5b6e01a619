/* Copies of the upstream fixtures written by the original implementation:
 * argv[2] = jsonl-zstd-packed root, argv[3] = jsonl-zstd-refused root.
 * open -> list -> load -> read_raw -> create -> append -> load -> close, and
 * the CORRUPTION and FORMAT_UNSUPPORTED statuses. */
#include "common.h"

static dsh_store *open_root(const char *root) {
    char config[4096];
    dsh_store *store = NULL;
    snprintf(config, sizeof config,
             "{\"backend\":\"jsonl\",\"root\":\"%s\",\"compression\":\"zstd\",\"packChunks\":true}",
             root);
    CHECK(dsh_store_open(config, &store));
    return store;
}

int main(int argc, char **argv) {
    dsh_store *store;
    char *out = NULL;
    char events[4096];
    EXPECT(argc >= 4);

    store = open_root(argv[2]);
    CHECK(dsh_store_list(store, &out));
    EXPECT(strstr(out, "\"id\":\"conv-basic\"") != NULL);
    EXPECT_RESULT(out, "\"id\":\"plan-mode\"");
    CHECK(dsh_store_load(store, "conv-basic", &out));
    EXPECT(strstr(out, "\"type\":\"tool/result\"") != NULL);
    EXPECT_RESULT(out, "\"id\":\"conv-basic\"");
    CHECK(dsh_store_read_raw(store, "plan-mode", &out));
    EXPECT_RESULT(out, "plan/mode");
    CHECK(dsh_store_inspect(store, "subagent-child", &out));
    EXPECT_RESULT(out, "\"parentSession\":");

    CHECK(dsh_store_create(store, "{\"id\":\"from-c\",\"cwd\":\"/tmp\"}"));
    turn_array(events, sizeof events, 1, 0);
    CHECK(dsh_store_append(store, "from-c", events));
    CHECK(dsh_store_load(store, "from-c", &out));
    EXPECT(count(out, "\"seq\":") == 6);
    dsh_free(out);
    CHECK(dsh_store_close(store));

    store = open_root(argv[3]);
    out = NULL;
    EXPECT_STATUS(dsh_store_load(store, "garbage-committed", &out), DSH_CORRUPTION,
                  "corrupt session log: unparsable committed event at line 12");
    EXPECT_STATUS(dsh_store_load(store, "version-1", &out), DSH_FORMAT_UNSUPPORTED,
                  "uses log format v1");
    EXPECT(out == NULL);
    CHECK(dsh_store_close(store));
    puts("test_fixture: ok");
    return 0;
}
