// SQLite's C API from the system's libsqlite3 (Debian: libsqlite3-dev to build, libsqlite3-0 to run).
#include <sqlite3.h>
