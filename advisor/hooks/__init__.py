"""advisor.hooks"""
