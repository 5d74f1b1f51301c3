#include "tandem/dist/node_links.h"

#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

#include "mpi_check.h"

namespace tandem {

struct NodeLinks::Impl {
  MPI_Comm node = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
};

NodeLinks::NodeLinks(World& world) : world_(world), impl_(std::make_unique<Impl>()) {
  world_
      .submit("split the world by node",
              [this] {
                mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_.rank(), MPI_INFO_NULL,
                                              &impl_->node),
                          "MPI_Comm_split_type");
                mpi_check(MPI_Comm_split(MPI_COMM_WORLD, world_.local_rank() == 0 ? 0 : MPI_UNDEFINED,
                                         world_.rank(), &impl_->leaders),
                          "MPI_Comm_split");
              })
      ->wait();
}

NodeLinks::~NodeLinks() {
  world_
      .submit("free the node communicators",
              [this] {
                MPI_Comm_free(&impl_->node);
                if (impl_->leaders != MPI_COMM_NULL) MPI_Comm_free(&impl_->leaders);
              })
      ->wait();
}

bool NodeLinks::member(Link link) const { return link == Link::within_node || impl_->leaders != MPI_COMM_NULL; }

int NodeLinks::size(Link link) const { return link == Link::within_node ? world_.local_size() : world_.node_count(); }

double NodeLinks::time_allreduce(Link link, int64_t count, int64_t iters) {
  MPI_Comm comm = link == Link::within_node ? impl_->node : impl_->leaders;
  std::vector<float> buf(static_cast<size_t>(count), 1.0f);
  double slowest = 0;
  world_
      .submit(std::string("allreduce(sum) f32[") + std::to_string(count) + "] " +
                  (link == Link::within_node ? "within the node" : "between nodes"),
              [&] {
                auto once = [&] {
                  mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm),
                            "MPI_Allreduce");
                };
                for (int w = 0; w < 3; ++w) once();
                mpi_check(MPI_Barrier(comm), "MPI_Barrier");
                const auto t0 = std::chrono::steady_clock::now();
                for (int64_t i = 0; i < iters; ++i) once();
                double mine = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                              static_cast<double>(iters);
                mpi_check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
              })
      ->wait();
  return slowest;
}

}  // namespace tandem
