-- -*- lua -*-
-- tandem: build and run environment for clusters with Lmod.
--
-- Loads the site's Open MPI, CUDA and HDF5 modules (and NCCL where the site
-- has one), points CMake at a site LibTorch, and tells slurm/train.sh where
-- the programs are. Use it in place (it finds the checkout from its own
-- path, so a copy or a link elsewhere would point at the wrong tree):
--
--   module use /path/to/tandem/env/modules     # this directory
--   module load tandem
--   env/build.sh -DTorch_DIR=$Torch_DIR        # once, on a node with the CUDA toolkit
--   mkdir -p logs && sbatch slurm/train.sh summarize jobs/summarize.toml
--
-- Site names and paths are the first lines below; each can also be set in
-- the environment before `module load tandem` (TANDEM_MODULE_MPI, ...).

local function site(var, default) return os.getenv(var) or default end

local mpi_module  = site("TANDEM_MODULE_MPI",  "openmpi")   -- built with Slurm/PMIx support
local cuda_module = site("TANDEM_MODULE_CUDA", "cuda")      -- the CUDA your LibTorch was built for
local hdf5_module = site("TANDEM_MODULE_HDF5", "hdf5")      -- the serial C library is enough
local nccl_module = site("TANDEM_MODULE_NCCL", "nccl")      -- loaded when the site has it
-- An unpacked LibTorch (C++ distribution, cxx11 ABI) matching the CUDA module,
-- e.g. libtorch-shared-with-deps-2.9.1+cu128.zip from pytorch.org.
local libtorch    = site("TANDEM_LIBTORCH", "/opt/libtorch/2.9.1-cu128")

-- The repository this file sits in: .../tandem/env/modules/tandem.lua
local root = myFileName():gsub("/env/modules/[^/]*$", "")

help([[
tandem: MPI + LibTorch training jobs (the programs in ]] .. root .. [[/build/apps).

Loads ]] .. mpi_module .. ", " .. cuda_module .. ", " .. hdf5_module .. [[ (and ]] .. nccl_module .. [[ when available),
and sets:
  Torch_DIR       ]] .. libtorch .. [[/share/cmake/Torch  (env/build.sh -DTorch_DIR=$Torch_DIR)
  TANDEM_ROOT     ]] .. root .. [[

  TANDEM_BUILD    $TANDEM_ROOT/build  (slurm/train.sh finds build/apps/APP there)
Build once:   cd $TANDEM_ROOT && env/build.sh -DTorch_DIR=$Torch_DIR
Check:        srun --mpi=pmix -n 2 --gpus-per-node=2 $TANDEM_BUILD/apps/envcheck --test
Train:        mkdir -p logs && sbatch slurm/train.sh summarize jobs/summarize.toml
Multi-node and NCCL settings: $TANDEM_ROOT/slurm/README.md
]])

whatis("Name: tandem")
whatis("Description: MPI + LibTorch training jobs; build and run environment")
whatis("URL: " .. root)

depends_on(mpi_module)
depends_on(cuda_module)
depends_on(hdf5_module)
try_load(nccl_module)

if mode() == "load" and not isDir(libtorch) then
  LmodMessage("tandem: no LibTorch at " .. libtorch ..
              ": set TANDEM_LIBTORCH to an unpacked LibTorch before `module load tandem`")
end

setenv("TANDEM_ROOT", root)
setenv("TANDEM_BUILD", pathJoin(root, "build"))
setenv("Torch_DIR", pathJoin(libtorch, "share/cmake/Torch"))
prepend_path("LD_LIBRARY_PATH", pathJoin(libtorch, "lib"))
prepend_path("PATH", pathJoin(root, "build/apps"))

-- Threads per rank follow Slurm's --cpus-per-task (slurm/train.sh sets
-- OMP_NUM_THREADS from it); NCCL settings for the site's network go here,
-- e.g. (see slurm/README.md):
-- setenv("NCCL_SOCKET_IFNAME", "ib0")
-- setenv("NCCL_IB_HCA", "mlx5")
