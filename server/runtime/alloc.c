/* alloc.c -- the test hook of alloc.h: NULL (no fault; static storage
 * starts zeroed) unless a test sets it. */
#include "alloc.h"

_Atomic(tv_alloc_fault_fn) tv_alloc_fault;
