//! Skills (FEATURES §7): the tolerant `SKILL.md` parser, the catalog and prompt index, and the
//! `skills_list`, `skill_view` and `skill_manage` tools.

mod catalog;
mod frontmatter;
mod manage;
mod tools;

pub use catalog::{
    INDEX_DESCRIPTION_MAX_CHARS, IndexFilter, SNAPSHOT_FILE, SkillCatalog, SkillEntry,
    SkillLoadError, current_platform,
};
pub use frontmatter::{FrontmatterError, ParsedSkill, SkillMeta, parse_skill_md};
pub use manage::{
    DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS, SKILL_MD_MAX_CHARS, SKILLS_LOCK_FILE, SUPPORT_DIRS,
    SUPPORT_FILE_MAX_BYTES, SkillManageTool, valid_skill_name, validate_skill_md,
};
pub use tools::{
    SkillViewTool, SkillsListTool, VIEW_MAX_BYTES, check_skill_name_arg, confined_path,
};
