/*
 * The MPI glue's table of where sucg runs MPI_Allgather: its syntax, the
 * ranges a call falls in, the transports a peer's lanes satisfy, and the
 * shipped default (only the measured wins).
 */
#include <gtest/gtest.h>
#include <string>
#include <vector>

extern "C" {
#include "sucg/mpi/sucg_mpi_tune.h"
}

namespace {

sucg_mpi_tune_t parsed(const char *str)
{
    sucg_mpi_tune_t t;
    char err[160] = "";

    EXPECT_EQ(0, sucg_mpi_tune_parse(str, &t, err, sizeof(err))) << err;
    return t;
}

std::string refused(const char *str)
{
    sucg_mpi_tune_t t;
    char err[160] = "";

    EXPECT_EQ(-1, sucg_mpi_tune_parse(str, &t, err, sizeof(err))) << str;
    EXPECT_EQ(0, t.count) << "a refused table must hold no range";
    return err;
}

sucg_mpi_tune_mask_t peer(const sucg_mpi_tune_t &t,
                          std::vector<const char*> tls)
{
    return sucg_mpi_tune_peer(&t, tls.data(), (int)tls.size());
}

}

TEST(sucg_mpi_tune, ranges_by_size_and_bytes)
{
    sucg_mpi_tune_t t = parsed("rc_verbs:[4-8]:1M-inf#*:[2,16]:0-64K");

    ASSERT_EQ(2, t.count);
    EXPECT_EQ(0x1u, sucg_mpi_tune_match(&t, 4, 1 << 20));
    EXPECT_EQ(0x1u, sucg_mpi_tune_match(&t, 8, (size_t)1 << 33));
    EXPECT_EQ(0x0u, sucg_mpi_tune_match(&t, 4, (1 << 20) - 1));
    EXPECT_EQ(0x0u, sucg_mpi_tune_match(&t, 9, 1 << 20));
    EXPECT_EQ(0x2u, sucg_mpi_tune_match(&t, 2, 0));
    EXPECT_EQ(0x2u, sucg_mpi_tune_match(&t, 16, 65536));
    EXPECT_EQ(0x0u, sucg_mpi_tune_match(&t, 16, 65537));
    EXPECT_EQ(0x0u, sucg_mpi_tune_match(&t, 3, 8));
}

TEST(sucg_mpi_tune, any_size_and_empty_table)
{
    sucg_mpi_tune_t t = parsed("*:*:0-inf");

    EXPECT_EQ(0x1u, sucg_mpi_tune_match(&t, 2, 1));
    EXPECT_EQ(0x1u, sucg_mpi_tune_match(&t, 1000, (size_t)-1));
    t = parsed("");
    EXPECT_EQ(0, t.count);
    EXPECT_EQ(0x0u, sucg_mpi_tune_match(&t, 4, 1 << 20));
    t = parsed("#tcp:*:4K-4K#");
    EXPECT_EQ(1, t.count);
    EXPECT_EQ(0x1u, sucg_mpi_tune_match(&t, 3, 4096));
}

TEST(sucg_mpi_tune, transports_a_peer_satisfies)
{
    sucg_mpi_tune_t t = parsed("rc_verbs:*:0-inf#shm:*:0-inf#*:*:0-inf#srqud:*:0-inf");

    EXPECT_EQ(0x5u, peer(t, {"rc_verbs", "ud_verbs"}));
    EXPECT_EQ(0x6u, peer(t, {"posix", "cma"}));
    EXPECT_EQ(0x4u, peer(t, {"posix", "tcp"}));
    EXPECT_EQ(0xcu, peer(t, {"srqud"}));
    EXPECT_EQ(0x4u, peer(t, {"ud_verbs"}));
    /* lanes not known: only "*" */
    EXPECT_EQ(0x4u, peer(t, {}));
}

TEST(sucg_mpi_tune, bad_tables_are_refused_with_the_reason)
{
    EXPECT_NE(std::string::npos, refused("rc_verbs").find("TRANSPORT:[SIZES]:LO-HI"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[4:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[0]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[8-4]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[2,]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:4:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:*:1M").find("block bytes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:*:2M-1M").find("block bytes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:*:1Q-inf").find("block bytes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:*:inf-inf").find("block bytes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[ 4]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[+4]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:[4294967300]:1M-inf").find("communicator sizes"));
    EXPECT_NE(std::string::npos, refused("rc_verbs:*:1M-17179869185G").find("block bytes"));
    EXPECT_NE(std::string::npos, refused(":*:0-inf").find("transport name"));
    /* one bad range refuses the whole table */
    refused("*:*:0-inf#tcp:*:x");

    std::string many;
    for (int i = 0; i <= SUCG_MPI_TUNE_MAX_RANGES; ++i) {
        many += "*:*:0-inf#";
    }
    EXPECT_NE(std::string::npos, refused(many.c_str()).find("more than"));
}

/* The shipped tables: sucg only where contrib/bench/sucg-tune.sh measured
 * it faster than the MPI's own Allgather beyond the spread. Open MPI: over
 * rc_verbs, 4 ranks from 64 KiB blocks and 8 ranks from 256 KiB; MPICH
 * (whose own Allgather spins where ranks share cores): 4 and 8 ranks over
 * rc_verbs and srqud, every size. Never 2 ranks, never ud_verbs or tcp. */
TEST(sucg_mpi_tune, default_tables_hold_only_the_measured_wins)
{
    sucg_mpi_tune_t o = parsed(SUCG_MPI_TUNE_DEFAULT_OMPI);
    sucg_mpi_tune_t m = parsed(SUCG_MPI_TUNE_DEFAULT_MPICH);
    const size_t sizes[] = {0, 8, 1024, 16384, 65536, 262144, 1 << 20, 1 << 30};

    for (size_t bytes : sizes) {
        for (int size : {2, 4, 8}) {
            sucg_mpi_tune_mask_t ob = sucg_mpi_tune_match(&o, size, bytes);
            sucg_mpi_tune_mask_t mb = sucg_mpi_tune_match(&m, size, bytes);
            bool ompi_rc = ((size == 4) && (bytes >= 65536)) ||
                           ((size == 8) && (bytes >= 262144));
            EXPECT_EQ(ompi_rc, (ob & peer(o, {"rc_verbs", "ud_verbs"})) != 0)
                << size << " " << bytes;
            EXPECT_EQ(0u, ob & peer(o, {"srqud"})) << size << " " << bytes;
            EXPECT_EQ(size != 2, (mb & peer(m, {"rc_verbs", "ud_verbs"})) != 0)
                << size << " " << bytes;
            EXPECT_EQ(size != 2, (mb & peer(m, {"srqud"})) != 0)
                << size << " " << bytes;
        }
    }
    for (const sucg_mpi_tune_t *t : {&o, &m}) {
        EXPECT_EQ(0u, peer(*t, {"ud_verbs"}));
        EXPECT_EQ(0u, peer(*t, {"tcp"}));
        EXPECT_EQ(0u, sucg_mpi_tune_match(t, 3, 1 << 20)) << "not measured";
    }
}
