// zlib, as the system provides it (every Apple platform; zlib1g-dev on Debian and Ubuntu).
#include <zlib.h>
