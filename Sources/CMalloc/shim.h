#ifndef SYNCBADGE_CMALLOC_SHIM_H
#define SYNCBADGE_CMALLOC_SHIM_H
// glibc's <malloc.h> (mallopt), which the Glibc module does not import.
#include <malloc.h>
#endif
