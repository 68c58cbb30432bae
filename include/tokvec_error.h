/* tokvec_error.h -- error codes shared by every core module.
 *
 * Every core call returns 0 on success or a negative code: either -errno for
 * a failed system call (-ENOENT, -ENOMEM, ...) or one of the TOKVEC_E_* codes
 * below, which live in a reserved range so they never collide with errno.
 * Codes are only ever appended, never renumbered: they are part of the ABI.
 * tokvec_strerror() turns any of them into a short English phrase.
 */
#ifndef TOKVEC_ERROR_H
#define TOKVEC_ERROR_H

#define TOKVEC_VERSION "0.1.0"

#if defined(__GNUC__)
#define TOKVEC_MUST_CHECK __attribute__((warn_unused_result))
#else
#define TOKVEC_MUST_CHECK
#endif

enum {
    TOKVEC_OK = 0,
    TOKVEC_E_FORMAT = -30600,         /* not safetensors, .npy or GGUF */
    TOKVEC_E_TRUNCATED = -30601,      /* file shorter than its header */
    TOKVEC_E_HEADER_SIZE = -30602,    /* header length beyond file/limit */
    TOKVEC_E_HEADER_JSON = -30603,    /* header JSON malformed or misshapen */
    TOKVEC_E_OFFSETS = -30604,        /* data offsets outside the data */
    TOKVEC_E_SIZE = -30605,           /* numel * dtype size != byte span */
    TOKVEC_E_RANK = -30606,           /* embedding tensor is not 2-D */
    TOKVEC_E_DTYPE = -30607,          /* unknown or unsupported dtype */
    TOKVEC_E_MISMATCH = -30608,       /* token/position dim or dtype differ */
    TOKVEC_E_NO_TENSOR = -30609,      /* token/named tensor not in file */
    TOKVEC_E_EMPTY = -30610,          /* a table with zero rows or columns */
    TOKVEC_E_NPY = -30611,            /* bad .npy magic/version/descr/order */
    TOKVEC_E_TOKEN_RANGE = -30612,    /* id < 0 or id >= vocab_size */
    TOKVEC_E_POSITION_RANGE = -30613, /* start_position + S > context */
    TOKVEC_E_NO_POSITIONS = -30614,   /* positions asked of a table w/o any */
    TOKVEC_E_INVAL = -30615,          /* invalid argument */
    TOKVEC_E_TOO_LARGE = -30616,      /* sizes overflow or exceed a limit */
    TOKVEC_E_METADATA = -30617,       /* __metadata__ value not usable */
    TOKVEC_E_SHARD_PATH = -30618,     /* shard outside the index's dir */
    TOKVEC_E_GGUF = -30619,           /* bad GGUF header or metadata */
    TOKVEC_E_TOKENIZER = -30620,      /* tokenizer file malformed */
    TOKVEC_E_MODEL = -30621,          /* model directory malformed */
};

/* A static string for any code this library returns (never NULL). */
const char *tokvec_strerror(int code);

/* The TOKVEC_E_* code as an identifier ("TOKVEC_E_SIZE"), or "errno". */
const char *tokvec_errname(int code);

#endif
