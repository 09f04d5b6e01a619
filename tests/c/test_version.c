/* Version macros, dsh_version, the last-error slot, and the header being
 * included twice as C11. */
#include "common.h"
#include "dsh_persist.h" /* a second include must be harmless */

#if DSH_PERSIST_VERSION_NUMBER != \
    (DSH_PERSIST_VERSION_MAJOR * 1000000L + DSH_PERSIST_VERSION_MINOR * 1000L + DSH_PERSIST_VERSION_PATCH)
#error "DSH_PERSIST_VERSION_NUMBER is not derived from MAJOR/MINOR/PATCH"
#endif

int main(int argc, char **argv) {
    char expected[64];
    (void)argc;
    (void)argv;
    snprintf(expected, sizeof expected, "%d.%d.%d", DSH_PERSIST_VERSION_MAJOR,
             DSH_PERSIST_VERSION_MINOR, DSH_PERSIST_VERSION_PATCH);
    EXPECT(strcmp(dsh_version(), expected) == 0);
    EXPECT(strcmp(dsh_version(), DSH_PERSIST_VERSION_STRING) == 0);
    EXPECT(dsh_version() == dsh_version()); /* static */
    EXPECT(DSH_PERSIST_VERSION_NUMBER == DSH_PERSIST_VERSION_MAJOR * 1000000L +
                                             DSH_PERSIST_VERSION_MINOR * 1000L +
                                             DSH_PERSIST_VERSION_PATCH);

    /* Never NULL, "" before any failure. */
    EXPECT(dsh_last_error() != NULL && dsh_last_error()[0] == '\0');
    EXPECT(dsh_last_error_code() != NULL && dsh_last_error_code()[0] == '\0');

    /* The status values of SPEC section 11. */
    EXPECT(DSH_OK == 0 && DSH_INVALID_ARGUMENT == 1 && DSH_NOT_FOUND == 2 && DSH_CONFLICT == 3);
    EXPECT(DSH_CORRUPTION == 4 && DSH_FORMAT_UNSUPPORTED == 5 && DSH_IO == 6 && DSH_BUSY == 7);
    EXPECT(DSH_CLOSED == 8 && DSH_INVARIANT == 9 && DSH_UNSUPPORTED == 10 && DSH_PANIC == 99);

    /* A failure sets the slot; dsh_free / dsh_version keep it; the next
     * status call clears it. */
    EXPECT_STATUS(dsh_plan_project(NULL, NULL), DSH_INVALID_ARGUMENT,
                  "`events_json` must not be NULL");
    dsh_free(NULL);
    (void)dsh_version();
    EXPECT(strstr(dsh_last_error(), "events_json") != NULL);
    {
        char *out = NULL;
        CHECK(dsh_plan_project("[]", &out));
        EXPECT_RESULT(out, "\"active\":false");
    }
    EXPECT(dsh_last_error()[0] == '\0');
    puts("test_version: ok");
    return 0;
}
