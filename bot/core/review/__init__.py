"""Reviewing a pull request: the facts a handler gathered (its diff, the default branch's config,
where it lives) in, a `ReviewPlan` out: the comment, check, label and record to publish; and the
risk a merge is recorded with.
"""
