"""What an organizer tells participants around a challenge: its pages rendered (Markdown,
sanitized), the rules each participant accepts before a first submission, announcements, and
the notification mails of its close and of its private board's reveal (docs/web.md,
"Competition pages")."""
