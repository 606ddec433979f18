// A pointer that is a member of a set for as long as a scope runs: the way a
// coroutine puts its timer or call where others can cut it short, and takes
// it out however it ends.
#pragma once

#include <set>

namespace switchyard {

template <class T>
class ScopedMember {
 public:
  ScopedMember(std::set<T*>& set, T* member) : set_(set), member_(member) { set_.insert(member_); }
  ~ScopedMember() { set_.erase(member_); }
  ScopedMember(const ScopedMember&) = delete;
  ScopedMember& operator=(const ScopedMember&) = delete;

 private:
  std::set<T*>& set_;
  T* member_;
};

}  // namespace switchyard
