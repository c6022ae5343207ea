# Development build of the srqud UCG MPI glue, independent of autotools:
#
#   make -f contrib/ucg/mpi.mk -j2 [check]
#
# Output in build/ucg-mpi (gitignored):
#   libsrqud_ucg.so                        UCG itself (same sources as dev.mk)
#   ompi/component/mca_coll_sucg.so        Open MPI 4.1 coll component
#   ompi/sucg_mpi_allgather_test           test program (Open MPI)
#   mpich/libsucg_pmpi.so                  PMPI library for LD_PRELOAD
#   mpich/sucg_mpi_allgather_test          test program (MPICH)
#
# Needs libopenmpi-dev openmpi-bin libmpich-dev mpich (both side by side).
TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
B       := $(TOP)/build/ucg-mpi
CC      ?= gcc
UCX_CFLAGS := $(shell pkg-config --cflags ucx)
UCX_LIBS   := $(shell pkg-config --libs ucx)
CFLAGS  ?= -O2 -g
WFLAGS  := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
           -Werror=implicit-function-declaration
LIBCFLAGS := $(CFLAGS) $(WFLAGS) -fPIC -fvisibility=hidden -I$(TOP)/src $(UCX_CFLAGS)

# Open MPI: public + devel headers (ompi_config.h, ompi/mca/coll/coll.h)
OMPI_INC  := /usr/lib/x86_64-linux-gnu/openmpi/include
OMPI_CFLAGS := -I$(OMPI_INC) -I$(OMPI_INC)/openmpi
OMPI_LIBS   := -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi -lopen-pal
OMPI_CC     := mpicc.openmpi
# MPICH
MPICH_CFLAGS := -I/usr/include/x86_64-linux-gnu/mpich
MPICH_LIBS   := -lmpich
MPICH_CC     := mpicc.mpich

UCG_SRCS := core/ucg_config.c core/ucg_rcache.c sched/ucg_sched.c \
            core/ucg_context.c core/ucg_group.c core/ucg_coll.c \
            allgather/allgather_rdma.c allgather/allgather_p2p.c
UCG_OBJS := $(addprefix $(B)/obj/,$(UCG_SRCS:.c=.o))
UCG_HDRS := $(wildcard $(TOP)/src/ucg/*/*.h)
RPATH    := -Wl,-rpath,$(B)

all: $(B)/libsrqud_ucg.so $(B)/ompi/component/mca_coll_sucg.so \
     $(B)/mpich/libsucg_pmpi.so \
     $(B)/ompi/sucg_mpi_allgather_test $(B)/mpich/sucg_mpi_allgather_test

$(B)/obj/%.o: $(TOP)/src/ucg/%.c $(UCG_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) -c $< -o $@

$(B)/libsrqud_ucg.so: $(UCG_OBJS)
	$(CC) -shared -Wl,-soname,libsrqud_ucg.so -o $@ $^ $(UCX_LIBS)

# the shared glue, once per MPI
$(B)/ompi/sucg_mpi.o: $(TOP)/src/ucg/mpi/sucg_mpi.c $(UCG_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) $(OMPI_CFLAGS) -c $< -o $@
$(B)/mpich/sucg_mpi.o: $(TOP)/src/ucg/mpi/sucg_mpi.c $(UCG_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) $(MPICH_CFLAGS) -c $< -o $@

$(B)/ompi/coll_sucg.o: $(TOP)/src/ucg/mpi/coll_sucg.c $(UCG_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) $(OMPI_CFLAGS) -c $< -o $@
$(B)/ompi/component/mca_coll_sucg.so: $(B)/ompi/coll_sucg.o $(B)/ompi/sucg_mpi.o $(B)/libsrqud_ucg.so
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(B)/ompi/coll_sucg.o $(B)/ompi/sucg_mpi.o \
	    -L$(B) -lsrqud_ucg $(RPATH) $(UCX_LIBS) $(OMPI_LIBS)

$(B)/mpich/sucg_pmpi.o: $(TOP)/src/ucg/mpi/sucg_pmpi.c $(UCG_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) $(MPICH_CFLAGS) -c $< -o $@
$(B)/mpich/libsucg_pmpi.so: $(B)/mpich/sucg_pmpi.o $(B)/mpich/sucg_mpi.o $(B)/libsrqud_ucg.so
	$(CC) -shared -Wl,-soname,libsucg_pmpi.so -o $@ $(B)/mpich/sucg_pmpi.o \
	    $(B)/mpich/sucg_mpi.o -L$(B) -lsrqud_ucg $(RPATH) $(UCX_LIBS) $(MPICH_LIBS)

TEST_SRC := $(TOP)/test/ucg/mpi/allgather_test.c
$(B)/ompi/sucg_mpi_allgather_test: $(TEST_SRC) $(TOP)/src/ucg/mpi/sucg_mpi_stats.h
	@mkdir -p $(dir $@)
	$(OMPI_CC) $(CFLAGS) $(WFLAGS) -I$(TOP)/src -o $@ $< -ldl
$(B)/mpich/sucg_mpi_allgather_test: $(TEST_SRC) $(TOP)/src/ucg/mpi/sucg_mpi_stats.h
	@mkdir -p $(dir $@)
	$(MPICH_CC) $(CFLAGS) $(WFLAGS) -I$(TOP)/src -o $@ $< -ldl
check: all
	$(TOP)/test/ucg/mpi/run.sh $(B)

clean:
	rm -rf $(B)

.PHONY: all check clean
