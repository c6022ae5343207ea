# Private development build of sucg, independent of the autotools
# skeleton:   make -f contrib/sucg/dev.mk -j2 [check]
# Output in build/sucg-dev (gitignored).
TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
B       := $(TOP)/build/sucg-dev
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

# same split as src/sucg/Makefile.am
LOGIC_SRCS := core/sucg_config.c core/sucg_rcache.c sched/sucg_sched.c
LIB_SRCS   := $(LOGIC_SRCS) core/sucg_context.c core/sucg_group.c \
              core/sucg_coll.c core/sucg_coll_req.c \
              allgather/allgather_rdma.c allgather/allgather_p2p.c
LOGIC_OBJS := $(addprefix $(B)/obj/,$(LOGIC_SRCS:.c=.o))
LIB_OBJS   := $(addprefix $(B)/obj/,$(LIB_SRCS:.c=.o))
HDRS     := $(wildcard $(TOP)/src/sucg/*/*.h)

all: $(B)/libsucg.so $(B)/sucg_unit $(B)/sucg_launch

$(B)/obj/%.o: $(TOP)/src/sucg/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libsucg.so: $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libsucg.so -o $@ $^ $(UCX_LIBS)

UNIT_SRCS := $(wildcard $(TOP)/test/sucg/unit/*.cc)
# the unit tests link the pure objects only (no UCP calls)
$(B)/sucg_unit: $(UNIT_SRCS) $(LOGIC_OBJS)
	$(CXX) $(CXXFLAGS) -o $@ $(UNIT_SRCS) $(LOGIC_OBJS) $(UCX_LIBS) -lgtest_main -lgtest -lpthread

$(B)/sucg_launch: $(TOP)/test/sucg/integration/sucg_launch.c $(B)/libsucg.so
	$(CC) $(filter-out -fvisibility=hidden,$(CFLAGS)) -o $@ $< -L$(B) -lsucg -Wl,-rpath,$(B) $(UCX_LIBS)

check: all
	$(B)/sucg_unit
	$(TOP)/test/sucg/integration/run.sh $(B)/sucg_launch

clean:
	rm -rf $(B)

.PHONY: all check clean
