# plb: one entry point. `make` builds, `make test` runs every test, `make demo`
# runs plb-mm under mpirun on config/demo.ini, then the simulator on the
# paper's five-machine cluster with every policy,
# `make bench` prints the benchmark figures. Missing Debian packages are
# installed first (scripts/install-deps.sh). Options:
#   V=1                  show commands
#   SANITIZE=address,undefined | SANITIZE=thread
#   WERROR=1             warnings are errors (CI sets it)
#   CUDA=0               do not build CUDA code even when nvcc is found
#   MPI=0                build without MPI: apps run in one process only
# CUDA code (kernels/*.cu, runtime/dev_cuda.c) is built when
# scripts/cuda-probe.sh finds a whole toolkit (nvcc, headers, cuBLAS), and C
# files then see PLB_HAVE_CUDA.

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wno-unused-parameter -fvisibility=hidden -D_POSIX_C_SOURCE=200809L \
           -Iinclude -Ibalancer -Iruntime -Ikernels -Iapps/plbsim -MMD -MP $(EXTRA_CFLAGS)
LDFLAGS := $(EXTRA_LDFLAGS)
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# scripts/cuda-probe.sh checks that nvcc, the headers and the libraries of
# the CUDA runtime and cuBLAS are all there and link; anything less builds
# without CUDA, saying why.
ifeq ($(CUDA),0)
NVCC    :=
else
CUDA_PROBE := $(shell sh scripts/cuda-probe.sh '$(CC)')
ifeq ($(firstword $(CUDA_PROBE)),none:)
NVCC    :=
ifneq ($(wordlist 1,4,$(CUDA_PROBE)),none: nvcc not found)
$(warning plb: building without CUDA: $(wordlist 2,100,$(CUDA_PROBE)))
endif
else
NVCC        := $(word 1,$(CUDA_PROBE))
CUDA_INCDIR := $(word 2,$(CUDA_PROBE))
CUDA_LIBDIR := $(word 3,$(CUDA_PROBE))
endif
endif
HAVE_CUDA := $(if $(NVCC),1,0)
ifeq ($(HAVE_CUDA),1)
NVCCFLAGS := -std=c++17 -O2 -Iinclude -Ikernels -I$(CUDA_INCDIR) $(EXTRA_NVCCFLAGS)
CFLAGS    += -DPLB_HAVE_CUDA
CUDA_LIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

BAL_LIBS := -lnlopt -llapacke -llapack -lblas -lm
RT_LIBS  := -linih -lcjson
KERN_LIBS := -lblas $(CUDA_LIBS)
# Evaluated when used, so that a fresh machine gets mpicc installed first.
MPI       ?= 1
ifeq ($(MPI),0)
MPI_LIBS   =
else
CFLAGS    += -DPLB_HAVE_MPI
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   = $(shell mpicc --showme:link 2>/dev/null)
endif
RUN_LIBS   = $(MPI_LIBS) -lhwloc -lpthread -ldl

# runtime/: the pure part (config, models, bounds, report: also plbsim's)
# and the part that runs jobs (master, worker, devices, transport).
RUN_NAMES := plb options master worker dev_cpu dev_emu transport_local \
             $(if $(filter 0,$(MPI)),,transport_mpi) $(if $(NVCC),dev_cuda)
RUN_SRC   := $(RUN_NAMES:%=runtime/%.c)
BAL_SRC   := $(wildcard balancer/*.c balancer/policies/*.c)
RT_SRC    := $(filter-out $(RUN_SRC) runtime/dev_cuda.c runtime/transport_mpi.c,$(wildcard runtime/*.c))
APPS      := mm null
KERN_SRC  := $(wildcard kernels/*.c)
CU_SRC    := $(if $(NVCC),$(wildcard kernels/*.cu))
SIM_SRC   := apps/plbsim/main.c
SIMLIB_SRC := apps/plbsim/sim.c
TEST_SRC  := $(wildcard test/unit/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)

BAL_OBJ   := $(BAL_SRC:%.c=$(BUILD)/%.o)
RT_OBJ    := $(RT_SRC:%.c=$(BUILD)/%.o)
RUN_OBJ   := $(RUN_SRC:%.c=$(BUILD)/%.o)
APP_BINS  := $(APPS:%=$(BUILD)/plb-%)
KERN_OBJ  := $(KERN_SRC:%.c=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.cu.o)
SIM_OBJ   := $(SIM_SRC:%.c=$(BUILD)/%.o)
SIMLIB_OBJ := $(SIMLIB_SRC:%.c=$(BUILD)/%.o)
TESTS     := $(TEST_SRC:test/unit/%.c=$(BUILD)/test/%)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

LIBBAL    := $(BUILD)/libplbbal.a
LIBRT     := $(BUILD)/libplbrt.a
LIBRUN    := $(BUILD)/libplbrun.a
LIBSIM    := $(BUILD)/libplbsim.a
LIBKERN   := $(BUILD)/libplbkern.a
PLBSIM    := $(BUILD)/plbsim
DEPS_OK   := $(BUILD)/.deps-ok-mpi$(MPI)

.PHONY: all test demo bench clean deps app-flags
all: $(PLBSIM) $(APP_BINS) $(TESTS) $(BENCHES)

# Installs what is missing; re-checked when the script changes.
$(DEPS_OK): scripts/install-deps.sh
	$(Q)MPI=$(MPI) bash scripts/install-deps.sh
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_OK)

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIBBAL): $(BAL_OBJ)
	$(Q)$(AR) rcs $@ $^
$(LIBRT): $(RT_OBJ)
	$(Q)$(AR) rcs $@ $^
$(LIBRUN): $(RUN_OBJ)
	$(Q)$(AR) rcs $@ $^

# The one file with mpi.h, and the one runtime file with CUDA headers.
$(BUILD)/runtime/transport_mpi.o: CFLAGS += $(MPI_CFLAGS)
$(BUILD)/runtime/dev_cuda.o: CFLAGS += -I$(CUDA_INCDIR)

$(BUILD)/plb-%: $(BUILD)/apps/%/main.o $(LIBRUN) $(LIBKERN) $(LIBRT) $(LIBBAL)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(RUN_LIBS) $(RT_LIBS) $(KERN_LIBS) $(BAL_LIBS)
$(LIBSIM): $(SIMLIB_OBJ)
	$(Q)$(AR) rcs $@ $^
$(LIBKERN): $(KERN_OBJ)
	$(Q)$(AR) rcs $@ $^

$(BUILD)/%.cu.o: %.cu | $(DEPS_OK)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(PLBSIM): $(SIM_OBJ) $(LIBSIM) $(LIBRT) $(LIBBAL)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS) $(BAL_LIBS)

$(BUILD)/test/%: $(BUILD)/test/unit/%.o $(LIBSIM) $(LIBRT) $(LIBKERN) $(LIBBAL)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -lcmocka $(RT_LIBS) $(KERN_LIBS) $(BAL_LIBS) -lpthread

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBSIM) $(LIBRT) $(LIBBAL)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS) $(BAL_LIBS)

test: all
	$(Q)PLBSIM=$(PLBSIM) BUILD=$(BUILD) MPI=$(MPI) bash test/run.sh

demo: $(PLBSIM) $(APP_BINS)
	$(Q)BUILD=$(BUILD) MPI=$(MPI) bash scripts/demo.sh

bench: all
	$(Q)PLBSIM=$(PLBSIM) BUILD=$(BUILD) bash bench/run.sh

# How to build an app against plb (test/cli/readme_example.sh uses it).
app-flags:
	@echo $(filter-out -MMD -MP,$(CFLAGS)) $(abspath $(LIBRUN) $(LIBKERN) $(LIBRT) $(LIBBAL)) \
	      $(RUN_LIBS) $(RT_LIBS) $(KERN_LIBS) $(BAL_LIBS)

clean:
	rm -rf $(BUILD)

-include $(BAL_OBJ:.o=.d) $(RT_OBJ:.o=.d) $(RUN_OBJ:.o=.d) $(APPS:%=$(BUILD)/apps/%/main.d) $(SIM_OBJ:.o=.d) $(SIMLIB_OBJ:.o=.d) \
         $(TEST_SRC:test/unit/%.c=$(BUILD)/test/unit/%.d) \
         $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%.d)
.SECONDARY:
