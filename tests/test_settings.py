"""PERFBOT_* settings: defaults, rotation list, modes and one-line errors."""

import pytest

from bot.settings import Settings, SettingsError, queue_file_beside


def test_the_defaults_are_the_embedded_single_process_setup():
    settings = Settings.from_env({})
    assert settings.database_url == "sqlite:///perfbot.db"
    assert settings.resolved_queue_url == "sqlite:///perfbot.queue.db"
    assert settings.github_api_url == "https://api.github.com" and settings.mode == "none"


def test_several_webhook_secrets_are_read_for_rotation():
    assert Settings.from_env({"PERFBOT_WEBHOOK_SECRET": "new, old ,"}).webhook_secrets == ("new", "old")


def test_app_mode_needs_the_id_and_the_key(tmp_path):
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n...")  # a fake key: only its path is read here
    settings = Settings.from_env({"PERFBOT_APP_ID": "12", "PERFBOT_PRIVATE_KEY_PATH": str(key)})
    assert settings.mode == "app" and settings.app_id == 12
    with pytest.raises(SettingsError, match="must be set together"):
        Settings.from_env({"PERFBOT_APP_ID": "12"})


def test_token_mode_and_an_enterprise_api_url():
    settings = Settings.from_env(
        {"PERFBOT_GITHUB_TOKEN": "ghp_x", "PERFBOT_GITHUB_API_URL": "https://ghe.example/api/v3/"}
    )
    assert settings.mode == "token" and settings.github_api_url == "https://ghe.example/api/v3"


@pytest.mark.parametrize(
    "env,message",
    [
        ({"PERFBOT_APP_ID": "twelve"}, "PERFBOT_APP_ID"),
        ({"PERFBOT_QUEUE_URL": "amqp://x"}, "PERFBOT_QUEUE_URL"),
        ({"PERFBOT_PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, "cannot read"),
        ({"PERFBOT_OAUTH_CLIENT_ID": "Iv1.x"}, "must be set together"),
        ({"PERFBOT_OAUTH_CLIENT_ID": "Iv1.x", "PERFBOT_OAUTH_CLIENT_SECRET": "s"}, "PERFBOT_SESSION_SECRET"),
        (
            {
                "PERFBOT_OAUTH_CLIENT_ID": "Iv1.x",
                "PERFBOT_OAUTH_CLIENT_SECRET": "s",
                "PERFBOT_SESSION_SECRET": "k" * 32,
            },
            "PERFBOT_PUBLIC_URL is required",
        ),
        ({"PERFBOT_SESSION_SECRET": "short"}, "at least 32"),
        ({"PERFBOT_DASHBOARD_ANONYMOUS": "everyone"}, "PERFBOT_DASHBOARD_ANONYMOUS"),
        ({"PERFBOT_PUBLIC_URL": "perfbot.example"}, "PERFBOT_PUBLIC_URL"),
        ({"PERFBOT_DATABASE_URL": "mysql://u@db/perfbot"}, "PERFBOT_DATABASE_URL: perfbot stores in SQLite"),
        ({"PERFBOT_DATABASE_URL": "::not a url"}, "PERFBOT_DATABASE_URL: not a database URL"),
        ({"PERFBOT_DATABASE_URL": "postgresql+asyncpg://db/perfbot"}, "postgresql\\+psycopg"),
        ({"PERFBOT_QUEUE_URL": "sqlite:///::"}, None),
    ],
)
def test_malformed_settings_name_the_variable(env, message):
    if message is None:  # accepted: a file name may hold colons
        Settings.from_env(env)
        return
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(env)


@pytest.mark.parametrize(
    "url", ["postgresql://u:p@db/perfbot", "postgres://u:p@db/perfbot", "postgresql+psycopg://u:p@db/perfbot"]
)
def test_a_postgresql_url_without_a_driver_uses_the_installed_one(url):
    """SQLAlchemy reads a bare postgresql:// as psycopg2, which perfbot does not install."""
    assert (
        Settings.from_env({"PERFBOT_DATABASE_URL": url}).database_url == "postgresql+psycopg://u:p@db/perfbot"
    )


def test_the_queue_file_sits_beside_a_sqlite_database():
    assert queue_file_beside("sqlite:////var/lib/perfbot/bot.db") == "/var/lib/perfbot/bot.queue.db"
    assert queue_file_beside("postgresql://db/perfbot") == "perfbot.queue.db"


def test_dashboard_sign_in_is_on_with_the_app_client_and_a_session_secret():
    assert not Settings.from_env({}).sign_in_enabled
    settings = Settings.from_env(
        {
            "PERFBOT_OAUTH_CLIENT_ID": "Iv1.x",
            "PERFBOT_OAUTH_CLIENT_SECRET": "s",
            "PERFBOT_SESSION_SECRET": "k" * 32,
            "PERFBOT_GITHUB_WEB_URL": "https://ghe.example/",
            "PERFBOT_DASHBOARD_ANONYMOUS": "None",
            "PERFBOT_PUBLIC_URL": "https://perfbot.example",
        }
    )
    assert settings.sign_in_enabled and settings.github_web_url == "https://ghe.example"
    assert settings.dashboard_anonymous == "none" and Settings.from_env({}).dashboard_anonymous == "public"
    assert "k" * 32 not in repr(settings) and "'s'" not in repr(settings)
