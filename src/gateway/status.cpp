#include "gateway/status.h"

#include <map>

namespace switchyard::gateway {

obs::StatusSnapshot take_snapshot(const InstanceTable& instances, const Router& router,
                                  const WaitQueue& queue, const ModelCatalog& catalog,
                                  bool draining) {
  obs::StatusSnapshot s;
  s.draining = draining;
  // Later copies of a name replace earlier ones unless the later one is gone
  // already and the earlier one still works.
  std::map<std::string, std::size_t, std::less<>> slot_of;
  for (const auto& inst : instances) {
    // Removed by a reload and stopped: gone from /health, the admin API and
    // the doctor's targets (the event log keeps its removal).
    if (inst->causes.has(fleet::AdminCause::reload_removing) &&
        inst->state == fleet::InstanceState::stopped)
      continue;
    obs::InstanceStatus st;
    st.name = inst->name();
    st.model = inst->model();
    st.health = fleet::to_string(inst->state);
    st.admin = fleet::to_string(inst->admin());
    st.admin_causes = inst->causes.describe();
    st.on_demand = inst->config.load == config::LoadMode::on_demand;
    st.url = inst->url ? "http://" + inst->url->authority() + inst->url->path : "";
    st.gpus = inst->config.gpus;
    st.slots = inst->slots;
    st.in_flight = router.in_flight(inst->index);
    st.restarts = inst->restarts;
    st.routable = inst->routable();
    const bool retired = inst->state == fleet::InstanceState::removed ||
                         inst->state == fleet::InstanceState::stopped;
    auto [it, fresh] = slot_of.try_emplace(st.name, s.instances.size());
    if (fresh) {
      s.instances.push_back(std::move(st));
    } else if (!retired || s.instances[it->second].health == "removed" ||
               s.instances[it->second].health == "stopped") {
      // The old copy's requests still count where the name is shown.
      st.in_flight += s.instances[it->second].in_flight;
      s.instances[it->second] = std::move(st);
    } else {
      s.instances[it->second].in_flight += st.in_flight;
    }
  }
  for (const auto& m : catalog.models()) s.models.push_back({m.name, queue.depth(m.name)});
  return s;
}

}  // namespace switchyard::gateway
