# Private development build of srqud UCG, independent of the autotools
# skeleton:   make -f contrib/ucg/dev.mk -j2 [check]
# Output in build/ucg-dev (gitignored).
TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
B       := $(TOP)/build/ucg-dev
CC      ?= gcc
CXX     ?= g++
UCX_CFLAGS := $(shell pkg-config --cflags ucx)
UCX_LIBS   := $(shell pkg-config --libs ucx)
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
           -Werror=implicit-function-declaration -fPIC -fvisibility=hidden \
           -I$(TOP)/src $(UCX_CFLAGS)
CXXFLAGS ?= -O1 -g
CXXFLAGS += -Wall -std=gnu++14 -I$(TOP)/src $(UCX_CFLAGS)

# same split as src/ucg/Makefile.am
LOGIC_SRCS := core/ucg_config.c core/ucg_rcache.c sched/ucg_sched.c
LIB_SRCS   := $(LOGIC_SRCS) core/ucg_context.c core/ucg_group.c \
              core/ucg_coll.c allgather/allgather_rdma.c allgather/allgather_p2p.c
LOGIC_OBJS := $(addprefix $(B)/obj/,$(LOGIC_SRCS:.c=.o))
LIB_OBJS   := $(addprefix $(B)/obj/,$(LIB_SRCS:.c=.o))
HDRS     := $(wildcard $(TOP)/src/ucg/*/*.h)

all: $(B)/libsrqud_ucg.so $(B)/sucg_unit $(B)/sucg_launch

$(B)/obj/%.o: $(TOP)/src/ucg/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libsrqud_ucg.so: $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libsrqud_ucg.so -o $@ $^ $(UCX_LIBS)

UNIT_SRCS := $(wildcard $(TOP)/test/ucg/unit/*.cc)
# the unit tests link the pure objects only (no UCP calls)
$(B)/sucg_unit: $(UNIT_SRCS) $(LOGIC_OBJS)
	$(CXX) $(CXXFLAGS) -o $@ $(UNIT_SRCS) $(LOGIC_OBJS) $(UCX_LIBS) -lgtest_main -lgtest -lpthread

$(B)/sucg_launch: $(TOP)/test/ucg/integration/sucg_launch.c $(B)/libsrqud_ucg.so
	$(CC) $(filter-out -fvisibility=hidden,$(CFLAGS)) -o $@ $< -L$(B) -lsrqud_ucg -Wl,-rpath,$(B) $(UCX_LIBS)

check: all
	$(B)/sucg_unit
	$(TOP)/test/ucg/integration/run.sh $(B)/sucg_launch

clean:
	rm -rf $(B)

.PHONY: all check clean
