/*
 * Where the MPI glue runs MPI_Allgather through sucg: a table of ranges,
 * each "TRANSPORT:[SIZES]:LO-HI", separated by '#':
 *
 *   TRANSPORT  a UCX transport name (rc_verbs, srqud, tcp, ...): every
 *              peer of the communicator is reached over a lane of it;
 *              "shm": every lane to every peer is shared memory (or self);
 *              "*": whatever the transports
 *   SIZES      "*" or a list of communicator sizes and ranges in brackets,
 *              e.g. [2,4-8]
 *   LO-HI      per-rank block bytes, inclusive, with K, M, G suffixes;
 *              HI may be "inf"
 *
 * e.g. "rc_verbs:[4-8]:1M-inf#shm:[2]:0-inf". A call goes through sucg when
 * one range holds for its communicator and block size; otherwise the MPI's
 * own Allgather runs. The ranks agree on which transports hold (one bit per
 * range, ANDed over the ranks when the group is created), so the decision
 * is the same on every rank.
 *
 * Pure logic (no MPI, no UCP): the unit tests run it on the host.
 */
#ifndef SUCG_MPI_TUNE_H_
#define SUCG_MPI_TUNE_H_

#include <stddef.h>
#include <stdint.h>

#define SUCG_MPI_TUNE_MAX_RANGES  32   /* bits of a mask */
#define SUCG_MPI_TUNE_MAX_SIZES   8    /* communicator size ranges per entry */
#define SUCG_MPI_TUNE_NAME_LEN    32

/*
 * Where sucg was measured faster than the MPI's own Allgather beyond the
 * spread (contrib/bench/sucg-tune.sh in the Soft-RoCE VM: 3 interleaved
 * repetitions, 2, 4 and 8 ranks on 2 cores, 8 B to 1 MB per rank; NEWS
 * 0.2.0), the tables used when the user sets none, one per MPI. MPICH's
 * own Allgather spins where ranks share cores (4 and 8 ranks here) and
 * sucg's library yields; Open MPI's tuned does not lose so. Transports,
 * communicator sizes and blocks not listed were slower, within the spread
 * or not measured.
 */
#define SUCG_MPI_TUNE_DEFAULT_OMPI  "rc_verbs:[4]:64K-inf#rc_verbs:[8]:256K-inf"
#define SUCG_MPI_TUNE_DEFAULT_MPICH "rc_verbs:[4,8]:0-inf#srqud:[4,8]:0-inf"

typedef enum {
    SUCG_MPI_TUNE_TL_ANY,     /* "*" */
    SUCG_MPI_TUNE_TL_SHM,     /* "shm" */
    SUCG_MPI_TUNE_TL_NAMED    /* a transport name */
} sucg_mpi_tune_tl_t;

typedef struct {
    sucg_mpi_tune_tl_t tl;
    char               name[SUCG_MPI_TUNE_NAME_LEN];
    int                nsizes;   /* 0: any communicator size */
    int                size_lo[SUCG_MPI_TUNE_MAX_SIZES];
    int                size_hi[SUCG_MPI_TUNE_MAX_SIZES];
    size_t             lo, hi;   /* per-rank block bytes, inclusive */
} sucg_mpi_tune_range_t;

typedef struct {
    int                   count;
    sucg_mpi_tune_range_t r[SUCG_MPI_TUNE_MAX_RANGES];
} sucg_mpi_tune_t;

typedef uint32_t sucg_mpi_tune_mask_t;

/* Parses @a str into @a t. Returns 0, or -1 with the reason in @a err
 * (@a t then holds no range: sucg is used nowhere) */
int sucg_mpi_tune_parse(const char *str, sucg_mpi_tune_t *t, char *err,
                        size_t err_len);

/* The ranges that hold for a communicator of @a size ranks and blocks of
 * @a bytes, whatever the transports */
sucg_mpi_tune_mask_t sucg_mpi_tune_match(const sucg_mpi_tune_t *t, int size,
                                         size_t bytes);

/* The ranges whose transport holds for one peer reached over the lanes'
 * transports @a tls[0..n-1] (n = 0: the lanes are unknown, only "*" holds) */
sucg_mpi_tune_mask_t sucg_mpi_tune_peer(const sucg_mpi_tune_t *t,
                                        const char *const *tls, int n);

/* Whether @a name is one of UCX's shared-memory transports (or self); the
 * UCC TL's shared-memory teams use it too */
int sucg_mpi_tune_tl_is_shm(const char *name);

#endif
