/* server_codes.h -- why tv_server_start failed (http.h), in a header of
 * its own below the front end's files: listen.c returns these too.
 */
#ifndef TV_SERVER_CODES_H
#define TV_SERVER_CODES_H

/* Why tv_server_start failed (it returns 0 or one of these). */
enum {
    TV_SERVER_E_SYSTEM = -1, /* the system refused: the port is in use or
                              * not permitted, a thread cannot start */
    TV_SERVER_E_INPUT = -2,  /* bad input: the table (missing, not a
                              * table), --host, the --unix-socket path */
    TV_SERVER_E_NOMEM = -3,  /* out of memory */
};

#endif
