"""Initial schema: every table of cyborg.db.models.

Revision ID: c1f7a5e3b2d0
Revises:
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

revision = 'c1f7a5e3b2d0'
down_revision = None
branch_labels = None
depends_on = None

# InnoDB for foreign keys and transactions; utf8mb4 for any Unicode text.
MYSQL_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _timestamps():
    return [sa.Column('created_at', sa.DateTime(), nullable=False),
            sa.Column('updated_at', sa.DateTime(), nullable=True)]


def _key_columns():
    return [sa.Column('id', sa.Integer(), primary_key=True),
            sa.Column('uuid', sa.String(36), nullable=False, unique=True)]


def upgrade():
    op.create_table(
        'devices',
        *_timestamps(),
        *_key_columns(),
        sa.Column('type', sa.String(30), nullable=False),
        sa.Column('vendor', sa.String(255), nullable=False),
        sa.Column('model', sa.String(255), nullable=False),
        sa.Column('std_board_info', sa.Text(), nullable=True),
        sa.Column('vendor_board_info', sa.Text(), nullable=True),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('status', sa.String(30), nullable=False),
        sa.Column('status_reason', sa.String(255), nullable=True),
        **MYSQL_OPTIONS)
    op.create_index('devices_hostname_idx', 'devices', ['hostname'])
    op.create_index('devices_type_idx', 'devices', ['type'])
    op.create_index('devices_vendor_idx', 'devices', ['vendor'])
    op.create_index('devices_status_idx', 'devices', ['status'])

    op.create_table(
        'deployables',
        *_timestamps(),
        *_key_columns(),
        sa.Column('parent_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='CASCADE'),
                  nullable=True),
        sa.Column('root_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='CASCADE'),
                  nullable=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('num_accelerators', sa.Integer(), nullable=False),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('driver_name', sa.String(100), nullable=True),
        sa.Column('rp_uuid', sa.String(36), nullable=True, unique=True),
        sa.Column('bitstream_id', sa.String(36), nullable=True),
        **MYSQL_OPTIONS)
    op.create_index('deployables_device_id_idx', 'deployables', ['device_id'])
    op.create_index('deployables_parent_id_idx', 'deployables', ['parent_id'])
    op.create_index('deployables_root_id_idx', 'deployables', ['root_id'])
    op.create_index('deployables_driver_name_idx', 'deployables',
                    ['driver_name'])
    op.create_index('deployables_bitstream_id_idx', 'deployables',
                    ['bitstream_id'])

    op.create_table(
        'attributes',
        *_timestamps(),
        *_key_columns(),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('parent_attribute_id', sa.Integer(),
                  sa.ForeignKey('attributes.id', ondelete='CASCADE'),
                  nullable=True),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.Text(), nullable=True),
        **MYSQL_OPTIONS)
    op.create_index('attributes_deployable_id_key_idx', 'attributes',
                    ['deployable_id', 'key'])
    op.create_index('attributes_key_idx', 'attributes', ['key'])
    op.create_index('attributes_parent_attribute_id_idx', 'attributes',
                    ['parent_attribute_id'])

    op.create_table(
        'controlpath_ids',
        *_timestamps(),
        *_key_columns(),
        sa.Column('device_id', sa.Integer(),
                  sa.ForeignKey('devices.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('cpid_type', sa.String(30), nullable=False),
        sa.Column('cpid_info', sa.String(255), nullable=False),
        sa.UniqueConstraint('device_id', 'cpid_type', 'cpid_info',
                            name='controlpath_ids_device_type_info_uc'),
        **MYSQL_OPTIONS)

    op.create_table(
        'attach_handles',
        *_timestamps(),
        *_key_columns(),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('cpid_id', sa.Integer(),
                  sa.ForeignKey('controlpath_ids.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('attach_type', sa.String(30), nullable=False),
        sa.Column('attach_info', sa.String(255), nullable=False),
        sa.Column('in_use', sa.Boolean(), nullable=False),
        sa.UniqueConstraint('deployable_id', 'attach_type', 'attach_info',
                            name='attach_handles_deployable_type_info_uc'),
        sa.CheckConstraint("attach_type IN ('PCI', 'MDEV', 'TEST_PCI')",
                           name='attach_handles_attach_type_ck'),
        **MYSQL_OPTIONS)
    op.create_index('attach_handles_deployable_id_in_use_idx',
                    'attach_handles', ['deployable_id', 'in_use'])

    op.create_table(
        'device_profiles',
        *_timestamps(),
        *_key_columns(),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('description', sa.Text(), nullable=True),
        sa.Column('profile_json', sa.Text(), nullable=False),
        **MYSQL_OPTIONS)

    op.create_table(
        'extended_accelerator_requests',
        *_timestamps(),
        *_key_columns(),
        sa.Column('state', sa.String(20), nullable=False),
        sa.Column('device_profile_id', sa.Integer(),
                  sa.ForeignKey('device_profiles.id'), nullable=False),
        sa.Column('device_profile_group_id', sa.Integer(), nullable=False),
        sa.Column('hostname', sa.String(255), nullable=True),
        sa.Column('device_rp_uuid', sa.String(36), nullable=True),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('attach_handle_id', sa.Integer(),
                  sa.ForeignKey('attach_handles.id', ondelete='SET NULL'),
                  nullable=True),
        sa.Column('deployable_id', sa.Integer(),
                  sa.ForeignKey('deployables.id', ondelete='SET NULL'),
                  nullable=True),
        sa.UniqueConstraint('attach_handle_id',
                            name='arqs_attach_handle_id_uc'),
        sa.CheckConstraint(
            "state IN ('Initial', 'BindStarted', 'Bound', 'BindFailed', "
            "'Unbound', 'UnbindFailed', 'Deleting')",
            name='arqs_state_ck'),
        **MYSQL_OPTIONS)
    op.create_index('arqs_instance_uuid_idx', 'extended_accelerator_requests',
                    ['instance_uuid'])
    op.create_index('arqs_project_id_idx', 'extended_accelerator_requests',
                    ['project_id'])
    op.create_index('arqs_state_idx', 'extended_accelerator_requests',
                    ['state'])
    op.create_index('arqs_device_profile_id_idx',
                    'extended_accelerator_requests', ['device_profile_id'])
    op.create_index('arqs_deployable_id_idx', 'extended_accelerator_requests',
                    ['deployable_id'])
    op.create_index('arqs_hostname_idx', 'extended_accelerator_requests',
                    ['hostname'])

    op.create_table(
        'services',
        *_timestamps(),
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('binary', sa.String(64), nullable=False),
        sa.Column('topic', sa.String(255), nullable=True),
        sa.Column('report_count', sa.Integer(), nullable=False),
        sa.Column('last_seen_up', sa.DateTime(), nullable=True),
        sa.UniqueConstraint('host', 'binary', name='services_host_binary_uc'),
        **MYSQL_OPTIONS)
