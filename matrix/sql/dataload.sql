-- The data load of shared/studies/zfs-compression-centos7.txt: one million
-- rows of a bigint, an md5 text and a timestamp.  fsmatrix runs it with
-- \timing on, so that every statement's time is recorded; the script has no
-- backslash command of its own (on a host whose owner has not allowed script
-- commands, psql runs it under \restrict, which refuses every one).
drop table if exists dataload;
create table dataload ( a bigint
                      , b varchar(100)
                      , c timestamp
                      );
with
  data_generator_num as
     ( select *
         from generate_series ( 1
                              , 1000000 ) nums
     )
insert into dataload
select data_generator_num.nums
     , md5(data_generator_num.nums::varchar)
     , current_date+data_generator_num.nums
 from data_generator_num;
