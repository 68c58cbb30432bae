/* sigbus.h -- the one fatal line of a SIGBUS (a table file truncated or
 * rewritten in place under its mapping, SECURITY.md), naming the file
 * mapped at the faulting address: the table, or the shard of a sharded
 * checkpoint (not its index), or a .npy table's positions file.
 *
 * Every line is prepared when a table is opened (the handler only reads a
 * slot and write()s); the handler runs on whichever thread touched the
 * page. Threads: tv_sigbus_install and tv_sigbus_add on the main thread
 * (start-up and SIGHUP reload); tv_sigbus_remove on any (whoever drops a
 * table's last reference), before the table is unmapped.
 */
#ifndef TV_SIGBUS_H
#define TV_SIGBUS_H

#include "tokvec_table.h"

/* Installs the handler (SA_RESETHAND: after its line, the faulting read
 * runs again and the default action ends the process). table: what the
 * line names for an address of no registered mapping. Main thread, once,
 * after the log format is set, before the server starts. */
void tv_sigbus_install(const char *table);

/* Registers t's mappings (tokvec_table_mapping), each with its line. A
 * table past the slots (more old tables alive at once than it has) is not
 * registered: its faults get the line of install. Main thread. */
void tv_sigbus_add(const tokvec_table *t);

/* Forgets t's mappings; call before closing t. Any thread. */
void tv_sigbus_remove(const tokvec_table *t);

/* The line prepared for a fault at addr ("" when addr is in no registered
 * mapping), for the tests. Any thread. */
const char *tv_sigbus_line_for(const void *addr);

#endif
