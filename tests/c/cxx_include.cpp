// The header compiles as C++ (-Wall -Wextra -Werror -pedantic), survives a
// second include, and declares every function with C linkage.
#include "dsh_persist.h"
#include "dsh_persist.h"

#include <cstring>

int main() {
    // Take the address of a few declarations (a C++ mangled name would not
    // link against the library).
    dsh_status (*open)(const char *, dsh_store **) = &dsh_store_open;
    void (*release)(char *) = &dsh_free;
    (void)open;
    (void)release;
    dsh_status s = DSH_OK;
    return (s == DSH_OK && std::strlen(dsh_version()) > 0 && dsh_last_error() != nullptr) ? 0 : 1;
}
