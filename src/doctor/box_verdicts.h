// Turns a BoxScan into verdicts in plain words: PCIe AtomicOps on each GPU's
// path, links that trained narrower than the card, cards that cannot talk
// peer-to-peer, and known issues by GPU model.
#pragma once

#include <vector>

#include "advisor/finding.h"
#include "doctor/box_scan.h"

namespace switchyard::doctor {

// Findings are the advisor's type: the gateway reports them too.
using advisor::count_findings;
using advisor::Finding;
using advisor::Severity;

// Severity rules (docs/doctor.md): missing or unverifiable atomics are
// warnings when two or more AMD GPUs share the box (tensor parallel is
// possible and will fail), notes otherwise; a link delivering less than half
// the card's bandwidth is a warning unless only its speed dropped (GPUs lower
// link speed when idle), anything milder a note; topology and known-issue
// findings are notes.
std::vector<Finding> judge_box(const BoxScan& scan);

}  // namespace switchyard::doctor
