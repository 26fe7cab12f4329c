#include "engine/root_files.h"

namespace snapsink {

namespace {

Status Walk(Env* env, const std::string& root, const std::string& rel,
            const std::function<void(const std::string&, filenames::FileKind)>& fn) {
  std::vector<std::string> names;
  // A plain file fails here (not a directory): it has no children.
  if (!env->GetChildren(rel.empty() ? root : filenames::Join(root, rel), &names).ok()) return Status::OK();
  for (const std::string& n : names) {
    const std::string child = rel.empty() ? n : rel + "/" + n;
    const filenames::FileKind kind = filenames::ClassifyRootPath(child);
    fn(child, kind);
    if (kind != filenames::FileKind::kUnknown && kind != filenames::FileKind::kTemp) {
      SNAPSINK_RETURN_IF_ERROR(Walk(env, root, child, fn));
    }
  }
  return Status::OK();
}

}  // namespace

Status ListRootFiles(Env* env, const std::string& root,
                     const std::function<void(const std::string&, filenames::FileKind)>& fn) {
  std::vector<std::string> top;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(root, &top));  // NotFound for a missing root
  return Walk(env, root, "", fn);
}

Status UnknownRootFiles(Env* env, const std::string& root, std::vector<std::string>* out) {
  return ListRootFiles(env, root, [&](const std::string& rel, filenames::FileKind kind) {
    if (kind == filenames::FileKind::kUnknown) out->push_back(rel);
  });
}

Status RemoveStrayTempFiles(Env* env, const std::string& root, std::vector<std::string>* removed) {
  std::vector<std::string> temps;
  SNAPSINK_RETURN_IF_ERROR(ListRootFiles(env, root, [&](const std::string& rel, filenames::FileKind kind) {
    if (kind == filenames::FileKind::kTemp && rel.rfind("partitions/", 0) != 0) temps.push_back(rel);
  }));
  for (const std::string& rel : temps) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(filenames::Join(root, rel)));
    removed->push_back(rel);
  }
  return Status::OK();
}

}  // namespace snapsink
