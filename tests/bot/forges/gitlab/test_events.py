"""GitLab webhook payloads → failed jobs: what is taken, and what is dropped as not GitLab's."""

from __future__ import annotations

from bot.forges.gitlab.events import (
    GitLabJob,
    MergeRequestRef,
    failed_job_hook,
    failed_pipeline_jobs,
    merge_request_iid,
    project_path,
    with_pipeline,
    with_target_branch,
)

SHA = "a" * 40


def _pipeline(**changes):
    payload = {
        "object_kind": "pipeline",
        "object_attributes": {"id": 5, "ref": "main", "sha": SHA},
        "merge_request": None,
        "project": {
            "id": 3,
            "path_with_namespace": "g/sub/p",
            "web_url": "https://gl.invalid/g/sub/p",
        },
        "builds": [
            {"id": 11, "name": "unit", "stage": "test", "status": "failed", "allow_failure": False},
            {
                "id": 12,
                "name": "lint",
                "stage": "test",
                "status": "success",
                "allow_failure": False,
            },
            {"id": 13, "name": "opt", "stage": "test", "status": "failed", "allow_failure": True},
        ],
    }
    return {**payload, **changes}


def test_a_pipeline_hook_names_its_failed_jobs_that_fail_the_pipeline():
    [job] = failed_pipeline_jobs("gl.invalid", _pipeline())
    assert job == GitLabJob(
        "gl.invalid", 3, "g/sub/p", 11, "unit", "test", 5, SHA, "main",
        web_url="https://gl.invalid/g/sub/p/-/jobs/11",
    )  # fmt: skip
    assert job.key == "gitlab:gl.invalid:3:job-11" and job.branch == "main"
    assert job.pipeline_label == "pipeline 5 / unit"


def test_the_merge_request_comes_from_the_hook_or_from_the_ref():
    with_mr = _pipeline(merge_request={"iid": 4, "target_branch": "release/1.0"})
    [job] = failed_pipeline_jobs("h", with_mr)
    assert job.merge_request == MergeRequestRef(4, "release/1.0") and job.branch == "release/1.0"
    attributes = {"id": 5, "ref": "refs/merge-requests/9/head", "sha": SHA}
    [job] = failed_pipeline_jobs("h", _pipeline(object_attributes=attributes))
    assert job.merge_request == MergeRequestRef(9, None) and job.branch is None
    assert with_target_branch(job, {"target_branch": "main"}).branch == "main"
    assert with_target_branch(job, {"target_branch": "--upload-pack=x"}).branch is None


def test_values_that_are_not_gitlabs_are_dropped():
    hostile = _pipeline(
        object_attributes={"id": 5, "ref": "-oops", "sha": "not-a-sha"},
        project={"id": 3, "path_with_namespace": "../../etc", "web_url": "javascript:alert(1)"},
    )
    [job] = failed_pipeline_jobs("h", hostile)
    assert (job.ref, job.sha, job.project, job.web_url) == (None, None, None, None)
    assert failed_pipeline_jobs("h", _pipeline(project={"id": "3"})) == []
    assert failed_pipeline_jobs("h", _pipeline(builds="x")) == []
    assert failed_pipeline_jobs("h", {"object_kind": "build"}) == []
    assert [project_path(p) for p in ("g/p", "g/s/p", "p", "g//p", "g/../p", "-g/p")] == [
        "g/p", "g/s/p", None, None, None, None,
    ]  # fmt: skip


def test_a_job_hook_names_its_job_and_the_pipeline_completes_it():
    hook = {
        "object_kind": "build", "build_id": 21, "build_name": "H100_PCIe-PyTorch-1",
        "build_stage": "test", "build_status": "failed", "build_allow_failure": False,
        "pipeline_id": 5, "project_id": 3, "ref": "feature", "sha": SHA,
        "project": {"path_with_namespace": "g/p", "web_url": "https://gl.invalid/g/p"},
    }  # fmt: skip
    job = failed_job_hook("h", hook)
    assert job is not None and (job.job_id, job.project, job.merge_request) == (21, "g/p", None)
    completed = with_pipeline(job, {"ref": "refs/merge-requests/2/merge", "sha": "b" * 40})
    assert completed.merge_request == MergeRequestRef(2, None) and completed.sha == SHA
    assert failed_job_hook("h", {**hook, "build_status": "success"}) is None
    assert failed_job_hook("h", {**hook, "build_allow_failure": True}) is None
    assert failed_job_hook("h", {**hook, "build_id": -1}) is None


def test_merge_request_refs():
    assert merge_request_iid("refs/merge-requests/12/head") == 12
    assert merge_request_iid("refs/merge-requests/12/train") == 12
    assert merge_request_iid("refs/heads/main") is None
    assert merge_request_iid("refs/merge-requests/x/head") is None
